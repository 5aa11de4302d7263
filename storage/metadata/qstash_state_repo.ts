// The QStash dialect's named state in the metadata database (table qstash_state): one JSON
// document per name, read once at start and written through on each change.
import { eq } from "drizzle-orm";
import { type MetadataDb, qstashState } from "./schema.ts";

export class QstashStateRepo {
  constructor(private readonly db: MetadataDb, private readonly nowMs: () => number) {}

  /** The document stored under `name`, parsed; undefined when there is none. */
  async get(name: string): Promise<unknown> {
    const rows = await this.db.select().from(qstashState).where(eq(qstashState.name, name));
    return rows.length === 0 ? undefined : JSON.parse(rows[0].valueJson);
  }

  async put(name: string, value: unknown): Promise<void> {
    const row = { name, valueJson: JSON.stringify(value), updatedAtMs: this.nowMs() };
    await this.db.insert(qstashState).values(row).onConflictDoUpdate({
      target: qstashState.name,
      set: { valueJson: row.valueJson, updatedAtMs: row.updatedAtMs },
    });
  }
}
