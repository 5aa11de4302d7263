// Opens a metadata SQLite file on Deno or Bun and returns a drizzle database over it.
//
// One code path on both runtimes: node:sqlite's DatabaseSync behind drizzle's sqlite-proxy
// driver (reference/runtimes.md, "SQL"). Statements run synchronously; drizzle awaits each,
// so every query on the returned db is async. Where node:sqlite cannot be imported we fall
// back to bun:sqlite, loaded by a dynamic import so that Deno never resolves it. This file
// is the only place that knows two drivers exist; it detects the feature, not the runtime.
//
// Deno needs --allow-read and --allow-write for the file (and its -wal and -shm siblings).

import { drizzle } from "drizzle-orm/sqlite-proxy";
import { applyMigrations } from "./migrations.ts";
import { type MetadataDb, metadataSchema } from "./schema.ts";

export type SqliteDriverName = "node:sqlite" | "bun:sqlite";

export interface OpenMetadataDbOptions {
  /** The SQLite binding. Default: node:sqlite, or bun:sqlite when node:sqlite cannot be
   * imported. Name one only to test that binding; the broker leaves this unset. */
  driver?: SqliteDriverName;
}

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
export async function openMetadataDb(
  path: string,
  options: OpenMetadataDbOptions = {},
): Promise<MetadataDbHandle> {
  const { connection, driver } = await connect(path, options.driver);
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

type SqlValue = null | number | bigint | string | Uint8Array;
type QueryMethod = "run" | "all" | "values" | "get";

/** The synchronous calls the proxy needs; both bindings provide them. */
interface SqliteConnection {
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

async function connect(
  path: string,
  driver: SqliteDriverName | undefined,
): Promise<{ connection: SqliteConnection; driver: SqliteDriverName }> {
  if (driver === "bun:sqlite") return { connection: await openBunSqlite(path), driver };
  let nodeSqlite: typeof import("node:sqlite");
  try {
    nodeSqlite = await import("node:sqlite");
  } catch (error) {
    if (driver === "node:sqlite") throw error;
    return { connection: await openBunSqlite(path, error), driver: "bun:sqlite" };
  }
  return { connection: openNodeSqlite(nodeSqlite, path), driver: "node:sqlite" };
}

function openNodeSqlite(binding: typeof import("node:sqlite"), path: string): SqliteConnection {
  const database = new binding.DatabaseSync(path);
  return {
    exec: (sqlText) => database.exec(sqlText),
    rows: (sqlText, params) => {
      const statement = database.prepare(sqlText);
      statement.setReturnArrays(true);
      return statement.all(...params) as unknown as unknown[][];
    },
    run: (sqlText, params) => {
      database.prepare(sqlText).run(...params);
    },
    inTransaction: () => database.isTransaction,
    close: () => database.close(),
  };
}

/** The subset of bun:sqlite's Database we call; typed here because Deno types bun:* as any. */
interface BunDatabase {
  exec(sqlText: string): void;
  prepare(sqlText: string): {
    values(...params: SqlValue[]): unknown[][] | null;
    run(...params: SqlValue[]): unknown;
    finalize(): void;
  };
  readonly inTransaction: boolean;
  close(): void;
}

async function openBunSqlite(path: string, nodeSqliteError?: unknown): Promise<SqliteConnection> {
  // A computed specifier keeps Deno from resolving the bun: scheme while loading this file.
  const specifier = ["bun", "sqlite"].join(":");
  let binding: { Database: new (path: string, options: { create: boolean }) => BunDatabase };
  try {
    binding = await import(specifier);
  } catch (error) {
    if (nodeSqliteError === undefined) {
      throw new Error("Cannot open the metadata database as bun:sqlite does not load", {
        cause: error,
      });
    }
    throw new Error(
      "Cannot open the metadata database as neither node:sqlite nor bun:sqlite loads",
      { cause: new AggregateError([nodeSqliteError, error]) },
    );
  }
  const database = new binding.Database(path, { create: true });
  return {
    exec: (sqlText) => database.exec(sqlText),
    // prepare() rather than query(): query() caches every distinct statement text for the
    // life of the database, and multi-row inserts make one text per row count.
    rows: (sqlText, params) => {
      const statement = database.prepare(sqlText);
      try {
        return statement.values(...params) ?? [];
      } finally {
        statement.finalize();
      }
    },
    run: (sqlText, params) => {
      const statement = database.prepare(sqlText);
      try {
        statement.run(...params);
      } finally {
        statement.finalize();
      }
    },
    inTransaction: () => database.inTransaction,
    close: () => database.close(),
  };
}
