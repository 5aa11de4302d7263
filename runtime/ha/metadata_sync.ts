// Metadata replication (issue #7, "state beside the log"): a slave mirrors its master's
// metadata database, as RocketMQ's SlaveSynchronize copies topics.json,
// subscriptionGroup.json and consumerOffset.json from the master every 10 s
// (reference/rocketmq.md §7, §15). The CommitLog goes over the replication link; this is
// the state beside it, copied whole each round: the tables are small (one row per topic,
// group, queue offset, schedule, subscription), and a whole copy needs no change log.
//
// The pieces: metadata_tables.ts (which tables), metadata_snapshot.ts (the snapshot, its
// checks and codec), metadata_follower.ts (the slave's loop); this file exports and imports.

import { asc } from "drizzle-orm";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import type { MetadataDb } from "../../storage/metadata/schema.ts";
import { checkSnapshot, type MetadataSnapshot } from "./metadata_snapshot.ts";
import { REPLICATED_TABLES, type TableSpec } from "./metadata_tables.ts";

export {
  decodeSnapshot,
  encodeSnapshot,
  METADATA_SNAPSHOT_BYTES_MAX,
  type MetadataSnapshot,
  MetadataSyncError,
  type MetadataSyncErrorCode,
  type SnapshotCodecOptions,
} from "./metadata_snapshot.ts";
export { MetadataFollower, type MetadataFollowerOptions } from "./metadata_follower.ts";

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
