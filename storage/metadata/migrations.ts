// Creates and upgrades the metadata tables when a file is opened. The DDL is embedded so the
// broker needs no migrations folder at run time; it must agree with schema.ts, which
// metadata_store_test.ts checks column by column.
//
// Each migration runs in one transaction together with the insert of its version into
// schema_version, so a crash leaves a file at the old version or the new, never between.
// Statements are IF NOT EXISTS and the version insert ignores a duplicate, so two openers
// racing on one file both succeed.
//
// STRICT tables make SQLite refuse a value of the wrong type (a float offset, a string
// count) instead of storing it.

import { sql } from "drizzle-orm";
import { assert } from "../errors.ts";
import { MetadataError } from "./metadata_store.ts";
import { type MetadataDb, schemaVersion } from "./schema.ts";

interface Migration {
  readonly version: number;
  readonly statements: readonly string[];
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE IF NOT EXISTS topic_config (
        topic_name TEXT PRIMARY KEY NOT NULL,
        read_queue_nums INTEGER NOT NULL DEFAULT 16,
        write_queue_nums INTEGER NOT NULL DEFAULT 16,
        perm INTEGER NOT NULL DEFAULT 6,
        is_order INTEGER NOT NULL DEFAULT 0,
        attributes_json TEXT NOT NULL DEFAULT '{}',
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        CONSTRAINT topic_config_perm_range CHECK (perm BETWEEN 0 AND 7)
      ) STRICT`,
      `CREATE TABLE IF NOT EXISTS consumer_group (
        group_name TEXT PRIMARY KEY NOT NULL,
        consume_enable INTEGER NOT NULL DEFAULT 1,
        message_model TEXT NOT NULL DEFAULT 'CLUSTERING',
        consume_from_where TEXT NOT NULL DEFAULT 'LAST_OFFSET',
        consume_timestamp_ms INTEGER,
        retry_max_times INTEGER NOT NULL DEFAULT 16,
        retry_queue_nums INTEGER NOT NULL DEFAULT 1,
        is_orderly INTEGER NOT NULL DEFAULT 0,
        retry_backoff_ms_json TEXT,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
      ) STRICT`,
      `CREATE TABLE IF NOT EXISTS consumer_offset (
        group_name TEXT NOT NULL,
        topic_name TEXT NOT NULL,
        queue_id INTEGER NOT NULL,
        queue_offset INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        PRIMARY KEY (group_name, topic_name, queue_id)
      ) STRICT, WITHOUT ROWID`,
      // removeTopic deletes by topic across all groups; the primary key leads with group.
      `CREATE INDEX IF NOT EXISTS consumer_offset_topic ON consumer_offset (topic_name)`,
    ],
  },
  {
    version: 2,
    statements: [
      `CREATE TABLE IF NOT EXISTS cron_schedule (
        schedule_id TEXT PRIMARY KEY NOT NULL,
        topic_name TEXT NOT NULL,
        cron TEXT NOT NULL,
        time_zone TEXT NOT NULL DEFAULT 'UTC',
        message_json TEXT NOT NULL,
        is_paused INTEGER NOT NULL DEFAULT 0,
        missed_ticks TEXT NOT NULL DEFAULT 'skip',
        last_tick_ms INTEGER,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
      ) STRICT`,
    ],
  },
  {
    version: 3,
    statements: [
      `CREATE TABLE IF NOT EXISTS webhook_subscription (
        group_name TEXT PRIMARY KEY NOT NULL,
        topic_name TEXT NOT NULL,
        config_json TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'active',
        status_reason TEXT,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
      ) STRICT`,
    ],
  },
  {
    version: 4,
    statements: [
      `CREATE TABLE IF NOT EXISTS qstash_state (
        name TEXT PRIMARY KEY NOT NULL,
        value_json TEXT NOT NULL,
        updated_at_ms INTEGER NOT NULL
      ) STRICT`,
    ],
  },
];

for (const [index, migration] of MIGRATIONS.entries()) {
  assert(migration.version === index + 1, "migration versions run 1, 2, 3… without gaps");
}

/** The version a file is at once applyMigrations returns. */
export const SCHEMA_VERSION_LATEST = MIGRATIONS[MIGRATIONS.length - 1].version;

/**
 * Brings the file up to SCHEMA_VERSION_LATEST and returns that version. Throws
 * MetadataError SCHEMA_VERSION_UNSUPPORTED for a file written by a newer build, which this
 * build must not touch.
 */
export async function applyMigrations(db: MetadataDb): Promise<number> {
  await db.run(sql.raw(
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY NOT NULL) STRICT",
  ));
  const current = await readVersion(db);
  if (current > SCHEMA_VERSION_LATEST) {
    throw new MetadataError(
      "SCHEMA_VERSION_UNSUPPORTED",
      `Cannot open metadata database as its schema version is newer than this build's: ${current} > ${SCHEMA_VERSION_LATEST}`,
    );
  }
  // Every pending migration in one transaction: one commit (one WAL fsync) for a new
  // database instead of one per version, as atomic (cold start: bench/README.md).
  const pending = MIGRATIONS.filter((m) => m.version > current);
  if (pending.length > 0) {
    const [first, ...rest] = pending.flatMap((migration) => [
      db.insert(schemaVersion).values({ version: migration.version }).onConflictDoNothing(),
      ...migration.statements.map((statement) => db.run(sql.raw(statement))),
    ]);
    await db.batch([first, ...rest]);
  }
  return await readVersion(db);
}

async function readVersion(db: MetadataDb): Promise<number> {
  const row = await db.get<[number | null]>(sql`SELECT max(version) FROM schema_version`);
  return row[0] ?? 0;
}
