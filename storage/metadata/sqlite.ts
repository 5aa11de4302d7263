// Opens a metadata SQLite file and returns a drizzle database over it.
//
// The SQLite binding comes from the caller (SqliteOpen: the platform's, or node_sqlite.ts
// in tests): node:sqlite's DatabaseSync on both runtimes, bun:sqlite where node:sqlite
// does not load (reference/runtimes.md, "SQL"). Behind drizzle's sqlite-proxy driver the
// statements run synchronously; drizzle awaits each, so every query on the returned db is
// async.
//
// Deno needs --allow-read and --allow-write for the file (and its -wal and -shm siblings).

import { drizzle } from "drizzle-orm/sqlite-proxy";
import { applyMigrations } from "./migrations.ts";
import { type MetadataDb, metadataSchema } from "./schema.ts";

export type SqliteDriverName = "node:sqlite" | "bun:sqlite";

/** An open metadata file. Close it exactly once when done; `using` does so. */
export interface MetadataDbHandle extends Disposable {
  readonly db: MetadataDb;
  readonly driver: SqliteDriverName;
  /** The migrations.ts version the file is at after open. */
  readonly schemaVersion: number;
  /** Idempotent. Queries after close reject. */
  close(): void;
}

/**
 * Opens (creating if missing) the SQLite file at `path`, or an in-memory database for
 * ":memory:", and applies migrations.ts. WAL with synchronous=FULL: a commit is one append
 * and one fsync of the WAL, and a committed metadata change survives power loss.
 *
 * Atomic multi-statement writes go through `db.batch([...])`, which runs its statements in
 * one BEGIN IMMEDIATE transaction with no await between them. Avoid `db.transaction()`:
 * the proxy driver awaits between its statements, so a concurrent query on the same
 * connection would land inside it, and a concurrent batch would fail to BEGIN.
 */
export async function openMetadataDb(path: string, open: SqliteOpen): Promise<MetadataDbHandle> {
  const connection = await open(path);
  const driver = connection.driver;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    connection.close();
  };
  try {
    connection.exec("PRAGMA journal_mode = WAL");
    connection.exec("PRAGMA synchronous = FULL");
    const db = drizzle(
      (sqlText, params, method) =>
        Promise.resolve(execute(connection, { sqlText, params, method })),
      (queries) =>
        Promise.resolve(
          inTransaction(connection, () =>
            queries.map((q) =>
              execute(connection, { sqlText: q.sql, params: q.params, method: q.method })
            )),
        ),
      { schema: metadataSchema },
    );
    const schemaVersion = await applyMigrations(db);
    return { db, driver, schemaVersion, close, [Symbol.dispose]: close };
  } catch (error) {
    close();
    throw error;
  }
}

export type SqlValue = null | number | bigint | string | Uint8Array;
type QueryMethod = "run" | "all" | "values" | "get";

/** Opens (creating if missing) one SQLite file, or ":memory:". */
export type SqliteOpen = (path: string) => Promise<SqliteConnection>;

/** The synchronous calls the proxy needs; both bindings provide them. */
export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  exec(sqlText: string): void;
  /** Result rows as arrays of column values, in select order. */
  rows(sqlText: string, params: SqlValue[]): unknown[][];
  run(sqlText: string, params: SqlValue[]): void;
  inTransaction(): boolean;
  close(): void;
}

// sqlite-proxy's contract: "get" answers the one row itself (undefined when there is
// none); "all" and "values" answer every row; "run" answers nothing.
function execute(
  connection: SqliteConnection,
  query: { sqlText: string; params: unknown[]; method: QueryMethod },
): { rows: unknown[] } {
  const params = query.params as SqlValue[];
  switch (query.method) {
    case "run":
      connection.run(query.sqlText, params);
      return { rows: [] };
    case "get":
      return { rows: connection.rows(query.sqlText, params)[0] as unknown[] };
    case "all":
    case "values":
      return { rows: connection.rows(query.sqlText, params) };
  }
}

function inTransaction<T>(connection: SqliteConnection, work: () => T): T {
  connection.exec("BEGIN IMMEDIATE");
  try {
    const result = work();
    connection.exec("COMMIT");
    return result;
  } catch (error) {
    // Some errors (SQLITE_FULL, SQLITE_IOERR) roll the transaction back themselves; a
    // second ROLLBACK would throw and hide the first error.
    if (connection.inTransaction()) connection.exec("ROLLBACK");
    throw error;
  }
}
