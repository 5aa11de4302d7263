// Metadata snapshots (issue #7, "state beside the log"): a slave mirrors its master's
// metadata database, as RocketMQ's SlaveSynchronize copies topics.json,
// subscriptionGroup.json and consumerOffset.json from the master every 10 s
// (reference/rocketmq.md §7, §15). The CommitLog goes over the replication link; this is
// the state beside it, copied whole each round: the tables are small (one row per topic,
// group, queue offset, schedule, subscription), and a whole copy needs no change log.
//
// Replicated, by SQL name: topic_config, consumer_group, consumer_offset, cron_schedule
// (with last_tick_ms, so a promoted slave does not publish again the ticks its master
// published) and webhook_subscription (with its signing secrets, so a promoted slave signs
// as its master did: the snapshot must only travel over the trusted replication link).
// Not replicated: schema_version, which records the migrations.ts steps this file has had,
// a fact about the local file and build; copying it would make a replica skip or repeat
// its own migrations. delayOffset.json and the timer checkpoint are files, not tables, and
// are not covered here.
//
// Rows travel with SQL column names and stored values (booleans as 0/1), so the wire shape
// is the DDL of migrations.ts, which is versioned, not the TypeScript property names. A
// snapshot must hold exactly the columns of this build's tables: a master and replica at
// different schema versions refuse each other's snapshots (TODO(#7): upgrades).

import { asc, getTableColumns } from "drizzle-orm";
import { getTableConfig, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { assert } from "../errors.ts";
import type { ConsumerOffsetStore } from "./offset_store.ts";
import {
  consumerGroup,
  consumerOffset,
  cronSchedule,
  type MetadataDb,
  metadataSchema,
  qstashState,
  schemaVersion,
  topicConfig,
  webhookSubscription,
} from "./schema.ts";

/** Largest encoded snapshot. Ours: 64 MiB holds ~300,000 offset rows of ~200 bytes of JSON,
 * and bounds what a replica parses and holds in memory at once. */
export const METADATA_SNAPSHOT_BYTES_MAX = 64 * 1024 * 1024;

/** Parameters per INSERT: SQLite's oldest default limit is 999 (SQLITE_MAX_VARIABLE_NUMBER);
 * offset_store.ts stays at 500 too. */
const PARAMS_PER_STATEMENT_MAX = 500;

export interface MetadataSnapshot {
  version: 1;
  /** The master's wall-clock ms before it read: every metadata write and every offset
   * committed before this time is in the snapshot. */
  takenAtMs: number;
  /** Every row of every replicated table, by SQL table and column name. */
  tables: Record<string, Record<string, unknown>[]>;
}

export type MetadataSyncErrorCode =
  | "SNAPSHOT_TOO_LARGE" // encoded bytes > bytesMax (METADATA_SNAPSHOT_BYTES_MAX)
  | "SNAPSHOT_MALFORMED" // not UTF-8 JSON
  | "SNAPSHOT_VERSION_UNSUPPORTED" // version is not 1
  | "SNAPSHOT_ILLEGAL" // a table, row, column or value this build's schema does not have
  | "FOLLOWER_STOPPED"; // syncNow() on a stopped MetadataFollower

/** A snapshot the replica refuses, or a follower that no longer runs. */
export class MetadataSyncError extends Error {
  constructor(readonly code: MetadataSyncErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MetadataSyncError";
  }
}

interface ColumnSpec {
  /** The drizzle property name. */
  readonly key: string;
  /** The SQL column name: the snapshot's. */
  readonly name: string;
  readonly column: SQLiteColumn;
}

interface TableSpec {
  readonly name: string;
  readonly table: SQLiteTable;
  readonly columns: readonly ColumnSpec[];
  /** Rows are exported in primary-key order, so equal tables give equal snapshots. */
  readonly keyColumns: readonly SQLiteColumn[];
  readonly rowsPerInsert: number;
}

const REPLICATED_TABLES: readonly TableSpec[] = [
  topicConfig,
  consumerGroup,
  consumerOffset,
  cronSchedule,
  webhookSubscription,
  qstashState,
].map(tableSpec);

/** Tables that stay with their file (see the top of this file). */
const LOCAL_TABLES: readonly SQLiteTable[] = [schemaVersion];

// A table added to schema.ts must be declared replicated or local here.
for (const table of Object.values(metadataSchema)) {
  assert(
    LOCAL_TABLES.includes(table) || REPLICATED_TABLES.some((spec) => spec.table === table),
    "every metadata table is either replicated or local",
  );
}

const TABLES_BY_NAME = new Map(REPLICATED_TABLES.map((spec) => [spec.name, spec]));

function tableSpec(table: SQLiteTable): TableSpec {
  const config = getTableConfig(table);
  const columns = Object.entries(getTableColumns(table)).map(([key, column]) => {
    // Every value is a JS number or string, so plain JSON carries it; a blob or real column
    // would need an encoding of its own here and in encodeSnapshot().
    const sqlType = column.getSQLType();
    assert(sqlType === "integer" || sqlType === "text", "metadata columns are integer or text");
    return { key, name: column.name, column };
  });
  const keyColumns = config.primaryKeys[0]?.columns ?? config.columns.filter((c) => c.primary);
  assert(keyColumns.length > 0, "every replicated table has a primary key");
  const rowsPerInsert = Math.floor(PARAMS_PER_STATEMENT_MAX / columns.length);
  assert(rowsPerInsert >= 1, "a row fits in one insert");
  return { name: config.name, table, columns, keyColumns, rowsPerInsert };
}

export interface ExportMetadataOptions {
  /** The master's in-memory offsets; persisted first, as the database lags them by up to
   * one flushConsumerOffsetInterval. */
  offsets?: ConsumerOffsetStore;
  /** Wall-clock ms, for takenAtMs. */
  nowMs: () => number;
}

/**
 * Every row of the replicated tables. The offsets are persisted rather than read from
 * memory: persist() writes only what changed since the last one (a few rows on a 5 s
 * interval), and then one read serves every table. All tables are read in one
 * transaction, so the snapshot is one consistent state.
 */
export async function exportMetadata(
  db: MetadataDb,
  options: ExportMetadataOptions,
): Promise<MetadataSnapshot> {
  const takenAtMs = options.nowMs();
  await options.offsets?.persist();
  const [first, ...rest] = REPLICATED_TABLES.map((spec) =>
    db.select().from(spec.table).orderBy(...spec.keyColumns.map((column) => asc(column)))
  );
  const results = await db.batch([first, ...rest]) as Record<string, unknown>[][];
  const tables: MetadataSnapshot["tables"] = {};
  for (const [index, spec] of REPLICATED_TABLES.entries()) {
    tables[spec.name] = results[index].map((row) => toStoredRow(spec, row));
  }
  return { version: 1, takenAtMs, tables };
}

/**
 * Replaces the contents of every replicated table with the snapshot's, in one transaction:
 * rows the master no longer has go. Refuses a snapshot that is not this build's shape with
 * a MetadataSyncError before writing anything; a row the database refuses (a CHECK, a
 * duplicate key) rolls the whole transaction back.
 *
 * The caller reloads whatever it keeps in memory from these tables afterwards (a
 * ConsumerOffsetStore opened earlier would persist its stale offsets over these).
 */
export async function importMetadata(
  db: MetadataDb,
  snapshot: MetadataSnapshot,
): Promise<{ rows: number }> {
  checkSnapshot(snapshot);
  // One batch is one BEGIN IMMEDIATE transaction with no await inside (sqlite.ts).
  const deletes = REPLICATED_TABLES.map((spec) => db.delete(spec.table));
  const inserts = REPLICATED_TABLES.flatMap((spec) =>
    chunks(snapshot.tables[spec.name], spec.rowsPerInsert).map((chunk) =>
      db.insert(spec.table).values(chunk.map((row) => toDrizzleRow(spec, row)))
    )
  );
  const [first, ...rest] = [...deletes, ...inserts];
  await db.batch([first, ...rest]);
  let rows = 0;
  for (const spec of REPLICATED_TABLES) rows += snapshot.tables[spec.name].length;
  return { rows };
}

export interface SnapshotCodecOptions {
  /** Default METADATA_SNAPSHOT_BYTES_MAX. */
  bytesMax?: number;
}

/** UTF-8 JSON. No column is a blob or holds a bigint (asserted where the tables are
 * listed), so JSON carries every value exactly. */
export function encodeSnapshot(
  snapshot: MetadataSnapshot,
  options: SnapshotCodecOptions = {},
): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(snapshot));
  checkSize(bytes.byteLength, options, "encode");
  return bytes;
}

/** Parses and checks a snapshot; refuses anything importMetadata would. */
export function decodeSnapshot(
  bytes: Uint8Array,
  options: SnapshotCodecOptions = {},
): MetadataSnapshot {
  checkSize(bytes.byteLength, options, "decode");
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new MetadataSyncError(
      "SNAPSHOT_MALFORMED",
      `Cannot decode metadata snapshot as it is not UTF-8 JSON: ${bytes.byteLength} bytes`,
      { cause: error },
    );
  }
  checkSnapshot(value);
  return value;
}

function checkSize(bytes: number, options: SnapshotCodecOptions, what: string): void {
  const { bytesMax = METADATA_SNAPSHOT_BYTES_MAX } = options;
  if (bytes <= bytesMax) return;
  throw new MetadataSyncError(
    "SNAPSHOT_TOO_LARGE",
    `Cannot ${what} metadata snapshot as it exceeds METADATA_SNAPSHOT_BYTES_MAX: ${bytes} > ${bytesMax} bytes`,
  );
}

/** Refuses anything but this build's snapshot: version 1, exactly the replicated tables,
 * rows with exactly their columns, each value of the column's type. */
function checkSnapshot(value: unknown): asserts value is MetadataSnapshot {
  if (!isPlainObject(value)) illegal("it is not an object");
  if (value.version !== 1) {
    throw new MetadataSyncError(
      "SNAPSHOT_VERSION_UNSUPPORTED",
      `Cannot import metadata snapshot as its version is not 1: ${String(value.version)}`,
    );
  }
  checkKeys(value, ["version", "takenAtMs", "tables"], "the snapshot");
  const { takenAtMs, tables } = value;
  if (!Number.isSafeInteger(takenAtMs) || (takenAtMs as number) < 0) {
    illegal(`takenAtMs is not a non-negative integer: ${String(takenAtMs)}`);
  }
  if (!isPlainObject(tables)) illegal("tables is not an object");
  checkKeys(tables, [...TABLES_BY_NAME.keys()], "tables");
  for (const spec of REPLICATED_TABLES) {
    const rows = tables[spec.name];
    if (!Array.isArray(rows)) illegal(`table ${spec.name} is not a list of rows`);
    for (const [index, row] of rows.entries()) checkRow(spec, row, `${spec.name} row ${index}`);
  }
}

function checkRow(spec: TableSpec, row: unknown, where: string): void {
  if (!isPlainObject(row)) illegal(`${where} is not an object`);
  checkKeys(row, spec.columns.map((c) => c.name), where);
  for (const { name, column } of spec.columns) {
    const value = row[name];
    const problem = valueProblem(column, value);
    if (problem !== undefined) illegal(`${where} column ${name} ${problem}: ${String(value)}`);
  }
}

/** Why the value cannot be stored in the column, or undefined if it can. */
function valueProblem(column: SQLiteColumn, value: unknown): string | undefined {
  if (value === null) return column.notNull ? "is null but NOT NULL" : undefined;
  if (column.getSQLType() === "text") {
    if (typeof value !== "string") return "is not a string";
    const allowed: readonly string[] | undefined = column.enumValues;
    if (allowed !== undefined && !allowed.includes(value)) return "is not one of its values";
    return undefined;
  }
  if (!Number.isSafeInteger(value)) return "is not a safe integer";
  if (column.dataType === "boolean" && value !== 0 && value !== 1) return "is not 0 or 1";
  return undefined;
}

/** Refuses a missing or an unknown key: a column this build lacks would be lost, and one
 * the snapshot lacks would take a default the master never had. */
function checkKeys(object: Record<string, unknown>, expected: string[], where: string): void {
  for (const key of expected) {
    if (!Object.hasOwn(object, key)) illegal(`${where} has no ${key}`);
  }
  for (const key of Object.keys(object)) {
    if (!expected.includes(key)) illegal(`${where} has ${key}, which this build does not know`);
  }
}

function illegal(reason: string): never {
  throw new MetadataSyncError(
    "SNAPSHOT_ILLEGAL",
    `Cannot import metadata snapshot as ${reason}`,
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A drizzle row (property names, booleans) as stored (column names, 0/1). */
function toStoredRow(spec: TableSpec, row: Record<string, unknown>): Record<string, unknown> {
  const stored: Record<string, unknown> = {};
  for (const { key, name, column } of spec.columns) {
    const value = row[key];
    stored[name] = value === null ? null : column.mapToDriverValue(value);
  }
  return stored;
}

/** The reverse of toStoredRow, for drizzle's insert. */
function toDrizzleRow(spec: TableSpec, row: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const { key, name, column } of spec.columns) {
    const value = row[name];
    values[key] = value === null ? null : column.mapFromDriverValue(value);
  }
  return values;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += size) {
    result.push(items.slice(start, start + size));
  }
  return result;
}
