// A metadata snapshot as a value and as bytes: its type, MetadataSyncError, and the codec
// that refuses anything but this build's shape (checked before anything is written).
//
// Rows travel with SQL column names and stored values (booleans as 0/1), so the wire shape
// is the DDL of migrations.ts, which is versioned, not the TypeScript property names. A
// snapshot must hold exactly the columns of this build's tables: a master and replica at
// different schema versions refuse each other's snapshots (TODO(#7): upgrades).
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { REPLICATED_TABLES, TABLES_BY_NAME, type TableSpec } from "./metadata_tables.ts";

/** Largest encoded snapshot. Ours: 64 MiB holds ~300,000 offset rows of ~200 bytes of JSON,
 * and bounds what a replica parses and holds in memory at once. */
export const METADATA_SNAPSHOT_BYTES_MAX = 64 * 1024 * 1024;

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
export function checkSnapshot(value: unknown): asserts value is MetadataSnapshot {
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
