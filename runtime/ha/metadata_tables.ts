// Which metadata tables a slave mirrors, as specs the snapshot code walks (columns, key
// order, rows per insert). A leaf, so export, import and the snapshot codec share it.
//
// Replicated, by SQL name: topic_config, consumer_group, consumer_offset, cron_schedule
// (with last_tick_ms, so a promoted slave does not publish again the ticks its master
// published) and webhook_subscription (with its signing secrets, so a promoted slave signs
// as its master did: the snapshot must only travel over the trusted replication link).
// Not replicated: schema_version, which records the migrations.ts steps this file has had,
// a fact about the local file and build; copying it would make a replica skip or repeat
// its own migrations. delayOffset.json and the timer checkpoint are files, not tables, and
// are not covered here.
import { getTableColumns } from "drizzle-orm";
import { getTableConfig, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { assert } from "../../storage/errors.ts";
import {
  consumerGroup,
  consumerOffset,
  cronSchedule,
  metadataSchema,
  schemaVersion,
  topicConfig,
  webhookSubscription,
} from "../../storage/metadata/schema.ts";

/** Parameters per INSERT: SQLite's oldest default limit is 999 (SQLITE_MAX_VARIABLE_NUMBER);
 * offset_store.ts stays at 500 too. */
const PARAMS_PER_STATEMENT_MAX = 500;

export interface ColumnSpec {
  /** The drizzle property name. */
  readonly key: string;
  /** The SQL column name: the snapshot's. */
  readonly name: string;
  readonly column: SQLiteColumn;
}

export interface TableSpec {
  readonly name: string;
  readonly table: SQLiteTable;
  readonly columns: readonly ColumnSpec[];
  /** Rows are exported in primary-key order, so equal tables give equal snapshots. */
  readonly keyColumns: readonly SQLiteColumn[];
  readonly rowsPerInsert: number;
}

export const REPLICATED_TABLES: readonly TableSpec[] = [
  topicConfig,
  consumerGroup,
  consumerOffset,
  cronSchedule,
  webhookSubscription,
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

export const TABLES_BY_NAME = new Map(REPLICATED_TABLES.map((spec) => [spec.name, spec]));

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
