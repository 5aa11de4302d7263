// node:sqlite's DatabaseSync as a SqliteConnection: the binding both runtimes load (Deno,
// and Bun since it ships node:sqlite). Like node_fs_port.ts, a portable implementation of
// a port storage declares; the platform hands it over.
import type { SqliteConnection } from "./sqlite.ts";

/** Opens `path` with node:sqlite; rejects when node:sqlite does not load here. */
export async function openNodeSqlite(path: string): Promise<SqliteConnection> {
  // Imported on first use, so a runtime without node:sqlite can load this module and fall
  // back to its own binding (runtime/platform/bun_sqlite.ts).
  const binding = await import("node:sqlite");
  const database = new binding.DatabaseSync(path);
  return {
    driver: "node:sqlite",
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
