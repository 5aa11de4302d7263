// Drizzle schema of the broker's metadata database: RocketMQ's topics.json,
// subscriptionGroup.json and consumerOffset.json (reference/rocketmq.md §7) as SQLite tables.
// Defaults are RocketMQ's (TopicConfig, SubscriptionGroupConfig); metadata_store.ts applies
// the same values in code, and the DDL carries them too.
// The tables are created by the embedded DDL in migrations.ts, which must agree with this
// file; metadata_store_test.ts compares the two column by column.
//
// Times are integer milliseconds since the Unix epoch from the injected clock, so a column's
// unit is in its name (`_ms`). Booleans are stored as 0/1.

import { sql } from "drizzle-orm";
import { check, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { SqliteRemoteDatabase } from "drizzle-orm/sqlite-proxy";

/** One row per topic: RocketMQ's TopicConfig. */
export const topicConfig = sqliteTable("topic_config", {
  topicName: text("topic_name").primaryKey(),
  readQueueNums: integer("read_queue_nums").notNull().default(16),
  writeQueueNums: integer("write_queue_nums").notNull().default(16),
  /** PermName bits: READ 4, WRITE 2, INHERIT 1 (reference/rocketmq.md §14). */
  perm: integer("perm").notNull().default(6),
  order: integer("is_order", { mode: "boolean" }).notNull().default(false),
  /** JSON object of string to string (TopicConfig.attributes). */
  attributesJson: text("attributes_json").notNull().default("{}"),
  createdAtMs: integer("created_at_ms").notNull(),
  updatedAtMs: integer("updated_at_ms").notNull(),
}, (t) => [
  check("topic_config_perm_range", sql`${t.perm} BETWEEN 0 AND 7`),
]);

/** One row per consumer group: RocketMQ's SubscriptionGroupConfig plus the group's
 * consume-from settings. */
export const consumerGroup = sqliteTable("consumer_group", {
  groupName: text("group_name").primaryKey(),
  consumeEnable: integer("consume_enable", { mode: "boolean" }).notNull().default(true),
  messageModel: text("message_model", { enum: ["CLUSTERING", "BROADCASTING"] })
    .notNull().default("CLUSTERING"),
  consumeFromWhere: text("consume_from_where", {
    enum: ["LAST_OFFSET", "FIRST_OFFSET", "TIMESTAMP"],
  }).notNull().default("LAST_OFFSET"),
  /** Wall-clock ms to start from when consumeFromWhere is TIMESTAMP; null otherwise. */
  consumeTimestampMs: integer("consume_timestamp_ms"),
  retryMaxTimes: integer("retry_max_times").notNull().default(16),
  retryQueueNums: integer("retry_queue_nums").notNull().default(1),
  orderly: integer("is_orderly", { mode: "boolean" }).notNull().default(false),
  /** JSON array of ms: the delay before retry N+1 is entry N. Null: the delay levels. */
  retryBackoffMsJson: text("retry_backoff_ms_json"),
  createdAtMs: integer("created_at_ms").notNull(),
  updatedAtMs: integer("updated_at_ms").notNull(),
});

/** One row per (group, topic, queue): the next queue offset the group will consume. */
export const consumerOffset = sqliteTable("consumer_offset", {
  groupName: text("group_name").notNull(),
  topicName: text("topic_name").notNull(),
  queueId: integer("queue_id").notNull(),
  offset: integer("queue_offset").notNull(),
  updatedAtMs: integer("updated_at_ms").notNull(),
}, (t) => [
  primaryKey({ columns: [t.groupName, t.topicName, t.queueId] }),
]);

/** One row per cron schedule: publish `message_json` to `topic_name` on `cron` in `time_zone`. */
export const cronSchedule = sqliteTable("cron_schedule", {
  scheduleId: text("schedule_id").primaryKey(),
  topicName: text("topic_name").notNull(),
  cron: text("cron").notNull(),
  timeZone: text("time_zone").notNull().default("UTC"),
  /** The message to publish, as the batch API's item JSON. */
  messageJson: text("message_json").notNull(),
  paused: integer("is_paused", { mode: "boolean" }).notNull().default(false),
  /** What to do with ticks missed while the broker was down: "skip" or "fire_once". */
  missedTicks: text("missed_ticks", { enum: ["skip", "fire_once"] }).notNull().default("skip"),
  /** The scheduled time of the last tick that was published; null before the first. */
  lastTickMs: integer("last_tick_ms"),
  createdAtMs: integer("created_at_ms").notNull(),
  updatedAtMs: integer("updated_at_ms").notNull(),
});

/** Webhook subscriptions: a consumer group whose consumer is an HTTP endpoint. The settings
 * are one JSON document (the API's SubscriptionInput, secrets included), validated by the
 * runtime; status is a column so pause/disable is one small update. */
export const webhookSubscription = sqliteTable("webhook_subscription", {
  groupName: text("group_name").primaryKey(),
  topicName: text("topic_name").notNull(),
  configJson: text("config_json").notNull(),
  status: text("status", { enum: ["active", "paused", "disabled"] }).notNull().default("active"),
  statusReason: text("status_reason"),
  createdAtMs: integer("created_at_ms").notNull(),
  updatedAtMs: integer("updated_at_ms").notNull(),
});

/** Named state of the QStash dialect (runtime/core/qstash*.ts), one JSON document per name:
 * "signing_keys" (current and next) and "dlq_tombstones" (deleted or retried dead letters per
 * group). A table, not files, so a replicated group's slaves get it with the rest and a
 * promoted slave signs with its master's keys. */
export const qstashState = sqliteTable("qstash_state", {
  name: text("name").primaryKey(),
  valueJson: text("value_json").notNull(),
  updatedAtMs: integer("updated_at_ms").notNull(),
});

/** Versions of migrations.ts applied to this file, one row each. */
export const schemaVersion = sqliteTable("schema_version", {
  version: integer("version").primaryKey(),
});

export const metadataSchema = {
  topicConfig,
  consumerGroup,
  consumerOffset,
  cronSchedule,
  webhookSubscription,
  qstashState,
  schemaVersion,
};

/** The drizzle database over one metadata file, as sqlite.ts opens it. Every query is async:
 * the sqlite-proxy driver awaits each statement. */
export type MetadataDb = SqliteRemoteDatabase<typeof metadataSchema>;
