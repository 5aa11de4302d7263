// Webhook subscriptions in the metadata database (table webhook_subscription): one row per
// subscription, its settings one JSON document (validated by the runtime, secrets included),
// its status a column so pause and disable are one small update.
import { eq } from "drizzle-orm";
import { type MetadataDb, webhookSubscription } from "./schema.ts";

type Row = typeof webhookSubscription.$inferSelect;

export type SubscriptionStatusValue = Row["status"];

/** One stored subscription: the row, with the settings document parsed. */
export interface SubscriptionRecord {
  group: string;
  topic: string;
  /** The settings the runtime stores (a JSON object). */
  config: Record<string, unknown>;
  status: SubscriptionStatusValue;
  statusReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export class WebhookSubscriptionRepo {
  constructor(private readonly db: MetadataDb) {}

  async all(): Promise<SubscriptionRecord[]> {
    const rows: Row[] = await this.db.select().from(webhookSubscription);
    return rows.map((row) => ({
      group: row.groupName,
      topic: row.topicName,
      config: JSON.parse(row.configJson),
      status: row.status,
      statusReason: row.statusReason,
      createdAt: row.createdAtMs,
      updatedAt: row.updatedAtMs,
    }));
  }

  /** Inserts the subscription, or replaces the row of its group. */
  async upsert(record: SubscriptionRecord): Promise<void> {
    const row = {
      groupName: record.group,
      topicName: record.topic,
      configJson: JSON.stringify(record.config),
      status: record.status,
      statusReason: record.statusReason,
      createdAtMs: record.createdAt,
      updatedAtMs: record.updatedAt,
    };
    await this.db.insert(webhookSubscription).values(row).onConflictDoUpdate({
      target: webhookSubscription.groupName,
      set: row,
    });
  }

  async setStatus(
    group: string,
    status: SubscriptionStatusValue,
    reason: string | null,
    nowMs: number,
  ): Promise<void> {
    await this.db.update(webhookSubscription)
      .set({ status, statusReason: reason, updatedAtMs: nowMs })
      .where(eq(webhookSubscription.groupName, group));
  }

  async delete(group: string): Promise<void> {
    await this.db.delete(webhookSubscription).where(eq(webhookSubscription.groupName, group));
  }
}
