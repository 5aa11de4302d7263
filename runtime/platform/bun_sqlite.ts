// The metadata database's SQLite on Bun: node:sqlite as on Deno (one code path), and
// bun:sqlite only where node:sqlite does not load (older Bun).
import { openNodeSqlite } from "../../storage/metadata/node_sqlite.ts";
import type { SqliteConnection, SqlValue } from "../../storage/metadata/sqlite.ts";

export async function openSqliteOnBun(path: string): Promise<SqliteConnection> {
  try {
    await import("node:sqlite");
  } catch (nodeSqliteError) {
    return await openBunSqlite(path, nodeSqliteError);
  }
  return await openNodeSqlite(path);
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

async function openBunSqlite(path: string, nodeSqliteError: unknown): Promise<SqliteConnection> {
  // A computed specifier keeps Deno from resolving the bun: scheme while loading this file.
  const specifier = ["bun", "sqlite"].join(":");
  let binding: { Database: new (path: string, options: { create: boolean }) => BunDatabase };
  try {
    binding = await import(specifier);
  } catch (error) {
    throw new Error(
      "Cannot open the metadata database as neither node:sqlite nor bun:sqlite loads",
      { cause: new AggregateError([nodeSqliteError, error]) },
    );
  }
  const database = new binding.Database(path, { create: true });
  return {
    driver: "bun:sqlite",
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
