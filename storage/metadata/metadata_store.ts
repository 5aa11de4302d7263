// Topic and consumer group configs, kept in the metadata database: RocketMQ's
// TopicConfigManager and SubscriptionGroupManager (reference/rocketmq.md §7) over SQLite.
// Every write is one statement, so it commits alone. Nothing is cached here: every read goes
// to SQLite, and a caller that reads a config on a hot path keeps its own copy.
//
// Names are validated by the caller (runtime/protocol: allowed characters and lengths,
// reference/rocketmq.md §18); everything else is checked here and refused with a
// MetadataError. Upsert replaces the whole config: a field left out takes its default,
// not its previous value.

import { asc, eq } from "drizzle-orm";
import { assert } from "../errors.ts";
import { consumerGroup, type MetadataDb, topicConfig } from "./schema.ts";

/** Most read or write queues of a topic, and most retry queues of a group. Ours, not
 * RocketMQ's (which takes any int): it bounds the per-queue arrays and loops of the
 * broker, and 1024 is 64 times RocketMQ's default of 16. */
export const QUEUE_NUMS_MAX = 1024;

/** PermName bits (reference/rocketmq.md §14). A perm is any combination: 0..7. */
export const PERM_READ = 4;
export const PERM_WRITE = 2;
export const PERM_INHERIT = 1;
export const PERM_MAX = PERM_READ | PERM_WRITE | PERM_INHERIT;

/** Largest topic attributes object, as UTF-8 JSON bytes. It is read with every topic
 * config, and RocketMQ's attributes are a handful of short key=value pairs. */
export const TOPIC_ATTRIBUTES_JSON_BYTES_MAX = 4096;

/** Largest retryMaxTimes: Java's int, the type of SubscriptionGroupConfig.retryMaxTimes. */
export const RETRY_MAX_TIMES_MAX = 2_147_483_647;

/** Most steps of a custom retry backoff list; it bounds the stored JSON. RocketMQ's
 * default schedule, the delay levels, has 18 steps. */
export const RETRY_BACKOFF_STEPS_MAX = 64;

/** Longest single backoff step in ms: timerMaxDelaySec, 3 days, the longest delay a timer
 * message may have (reference/rocketmq.md §8). */
export const RETRY_BACKOFF_MS_MAX = 259_200_000;

export type MetadataErrorCode =
  | "QUEUE_NUMS_ILLEGAL" // readQueueNums, writeQueueNums or retryQueueNums out of range
  | "PERM_ILLEGAL" // not an integer in 0..7
  | "FLAG_ILLEGAL" // order, orderly or consumeEnable not a boolean
  | "ATTRIBUTES_ILLEGAL" // not an object of strings, or its JSON is too large
  | "MESSAGE_MODEL_ILLEGAL"
  | "CONSUME_FROM_WHERE_ILLEGAL"
  | "CONSUME_TIMESTAMP_ILLEGAL" // TIMESTAMP without a non-negative integer ms
  | "RETRY_MAX_TIMES_ILLEGAL"
  | "RETRY_BACKOFF_ILLEGAL" // not null nor 1..64 integer steps of 1..259200000 ms
  | "QUEUE_ID_ILLEGAL" // offset commit: queueId outside 0..QUEUE_NUMS_MAX-1
  | "OFFSET_ILLEGAL" // offset commit: not a non-negative safe integer
  | "SCHEMA_VERSION_UNSUPPORTED"; // the file was written by a newer build

/** Input, or a file, that the metadata store refuses. The code is stable; the message is
 * for people. */
export class MetadataError extends Error {
  constructor(readonly code: MetadataErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MetadataError";
  }
}

export type MessageModel = "CLUSTERING" | "BROADCASTING";
export type ConsumeFromWhere = "LAST_OFFSET" | "FIRST_OFFSET" | "TIMESTAMP";

export interface TopicConfig {
  readonly topicName: string;
  readonly readQueueNums: number;
  readonly writeQueueNums: number;
  readonly perm: number;
  readonly order: boolean;
  readonly attributes: Readonly<Record<string, string>>;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

export interface ConsumerGroupConfig {
  readonly groupName: string;
  readonly consumeEnable: boolean;
  readonly messageModel: MessageModel;
  readonly consumeFromWhere: ConsumeFromWhere;
  /** Wall-clock ms to start from; set exactly when consumeFromWhere is TIMESTAMP. */
  readonly consumeTimestampMs: number | null;
  readonly retryMaxTimes: number;
  /** 0 turns retries off (RocketMQ: retryQueueNums <= 0 drops the send-back). */
  readonly retryQueueNums: number;
  readonly orderly: boolean;
  /** Delay in ms before retry N+1 is step N; null uses the delay levels. */
  readonly retryBackoffMs: readonly number[] | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

type Settings<T> = Omit<T, "createdAtMs" | "updatedAtMs">;
type TopicSettings = Omit<Settings<TopicConfig>, "topicName">;
type ConsumerGroupSettings = Omit<Settings<ConsumerGroupConfig>, "groupName">;

/** A config to upsert: the name, and any settings; an absent or undefined one defaults. */
export type TopicConfigInput = Pick<TopicConfig, "topicName"> & Partial<TopicSettings>;
export type ConsumerGroupConfigInput =
  & Pick<ConsumerGroupConfig, "groupName">
  & Partial<ConsumerGroupSettings>;

/** TopicConfig defaults (reference/rocketmq.md §7). */
export const TOPIC_CONFIG_DEFAULTS: Readonly<TopicSettings> = Object.freeze({
  readQueueNums: 16,
  writeQueueNums: 16,
  perm: PERM_READ | PERM_WRITE,
  order: false,
  attributes: Object.freeze({}),
});

/** SubscriptionGroupConfig defaults (reference/rocketmq.md §7), and the push consumer's
 * CLUSTERING and LAST_OFFSET (§13). */
export const CONSUMER_GROUP_DEFAULTS: Readonly<ConsumerGroupSettings> = Object.freeze({
  consumeEnable: true,
  messageModel: "CLUSTERING",
  consumeFromWhere: "LAST_OFFSET",
  consumeTimestampMs: null,
  retryMaxTimes: 16,
  retryQueueNums: 1,
  orderly: false,
  retryBackoffMs: null,
});

export interface MetadataStoreOptions {
  /** Wall-clock ms for createdAtMs and updatedAtMs. */
  nowMs: () => number;
  /** retryMaxTimes of a group created without one (maxReconsumeTimes); default 16. */
  retryMaxTimesDefault?: number;
}

export class MetadataStore {
  readonly #db: MetadataDb;
  readonly #nowMs: () => number;
  readonly #groupDefaults: Readonly<ConsumerGroupSettings>;

  constructor(db: MetadataDb, options: MetadataStoreOptions) {
    this.#db = db;
    this.#nowMs = options.nowMs;
    this.#groupDefaults = options.retryMaxTimesDefault === undefined
      ? CONSUMER_GROUP_DEFAULTS
      : { ...CONSUMER_GROUP_DEFAULTS, retryMaxTimes: options.retryMaxTimesDefault };
  }

  /** Creates or replaces a topic's config; keeps createdAtMs of an existing one. */
  async upsertTopic(input: TopicConfigInput): Promise<TopicConfig> {
    assertName(input.topicName);
    const config = withDefaults<Settings<TopicConfig>>(TOPIC_CONFIG_DEFAULTS, input);
    const what = `topic ${input.topicName}`;
    checkInteger(config.readQueueNums, QUEUE_NUMS_RANGE, what, "readQueueNums");
    checkInteger(config.writeQueueNums, QUEUE_NUMS_RANGE, what, "writeQueueNums");
    checkInteger(config.perm, PERM_RANGE, what, "perm");
    checkBoolean(config.order, what, "order");
    const nowMs = this.#nowMs();
    const row = {
      readQueueNums: config.readQueueNums,
      writeQueueNums: config.writeQueueNums,
      perm: config.perm,
      order: config.order,
      attributesJson: encodeAttributes(config.attributes, what),
      updatedAtMs: nowMs,
    };
    const [stored] = await this.#db.insert(topicConfig)
      .values({ topicName: input.topicName, createdAtMs: nowMs, ...row })
      .onConflictDoUpdate({ target: topicConfig.topicName, set: row })
      .returning();
    return toTopicConfig(stored);
  }

  async getTopic(topicName: string): Promise<TopicConfig | undefined> {
    const row = await this.#db.select().from(topicConfig)
      .where(eq(topicConfig.topicName, topicName)).get();
    return row === undefined ? undefined : toTopicConfig(row);
  }

  /** Every topic, by name. */
  async listTopics(): Promise<TopicConfig[]> {
    const rows = await this.#db.select().from(topicConfig).orderBy(asc(topicConfig.topicName));
    return rows.map(toTopicConfig);
  }

  /** Returns whether the topic existed. Its consumer offsets are the caller's to remove
   * (ConsumerOffsetStore.removeTopic), as they live in memory until persisted. */
  async deleteTopic(topicName: string): Promise<boolean> {
    const deleted = await this.#db.delete(topicConfig)
      .where(eq(topicConfig.topicName, topicName))
      .returning({ topicName: topicConfig.topicName });
    return deleted.length > 0;
  }

  /** Creates or replaces a group's config; keeps createdAtMs of an existing one. */
  async upsertConsumerGroup(input: ConsumerGroupConfigInput): Promise<ConsumerGroupConfig> {
    assertName(input.groupName);
    const config = withDefaults<Settings<ConsumerGroupConfig>>(this.#groupDefaults, input);
    checkConsumerGroup(config, `consumer group ${input.groupName}`);
    const nowMs = this.#nowMs();
    const row = {
      consumeEnable: config.consumeEnable,
      messageModel: config.messageModel,
      consumeFromWhere: config.consumeFromWhere,
      consumeTimestampMs: config.consumeTimestampMs,
      retryMaxTimes: config.retryMaxTimes,
      retryQueueNums: config.retryQueueNums,
      orderly: config.orderly,
      retryBackoffMsJson: config.retryBackoffMs === null
        ? null
        : JSON.stringify(config.retryBackoffMs),
      updatedAtMs: nowMs,
    };
    const [stored] = await this.#db.insert(consumerGroup)
      .values({ groupName: input.groupName, createdAtMs: nowMs, ...row })
      .onConflictDoUpdate({ target: consumerGroup.groupName, set: row })
      .returning();
    return toConsumerGroupConfig(stored);
  }

  async getConsumerGroup(groupName: string): Promise<ConsumerGroupConfig | undefined> {
    const row = await this.#db.select().from(consumerGroup)
      .where(eq(consumerGroup.groupName, groupName)).get();
    return row === undefined ? undefined : toConsumerGroupConfig(row);
  }

  /** Every consumer group, by name. */
  async listConsumerGroups(): Promise<ConsumerGroupConfig[]> {
    const rows = await this.#db.select().from(consumerGroup).orderBy(asc(consumerGroup.groupName));
    return rows.map(toConsumerGroupConfig);
  }

  /** Returns whether the group existed. Its consumer offsets are the caller's to remove
   * (ConsumerOffsetStore.removeGroup). */
  async deleteConsumerGroup(groupName: string): Promise<boolean> {
    const deleted = await this.#db.delete(consumerGroup)
      .where(eq(consumerGroup.groupName, groupName))
      .returning({ groupName: consumerGroup.groupName });
    return deleted.length > 0;
  }
}

/** The input's settings over the defaults; an undefined one is absent, as TypeScript's
 * optional properties allow either. */
function withDefaults<T extends object>(defaults: Partial<T>, input: Partial<T>): T {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(input)) {
    if (value !== undefined) merged[key] = value;
  }
  return merged as T;
}

function checkConsumerGroup(config: Settings<ConsumerGroupConfig>, what: string): void {
  checkBoolean(config.consumeEnable, what, "consumeEnable");
  checkBoolean(config.orderly, what, "orderly");
  if (config.messageModel !== "CLUSTERING" && config.messageModel !== "BROADCASTING") {
    throw new MetadataError(
      "MESSAGE_MODEL_ILLEGAL",
      `Cannot store ${what} as messageModel is not CLUSTERING or BROADCASTING: ${
        String(config.messageModel)
      }`,
    );
  }
  const from = config.consumeFromWhere;
  if (from !== "LAST_OFFSET" && from !== "FIRST_OFFSET" && from !== "TIMESTAMP") {
    throw new MetadataError(
      "CONSUME_FROM_WHERE_ILLEGAL",
      `Cannot store ${what} as consumeFromWhere is not LAST_OFFSET, FIRST_OFFSET or TIMESTAMP: ${
        String(from)
      }`,
    );
  }
  if (from === "TIMESTAMP") {
    checkInteger(config.consumeTimestampMs, CONSUME_TIMESTAMP_RANGE, what, "consumeTimestampMs");
  } else if (config.consumeTimestampMs !== null) {
    throw new MetadataError(
      "CONSUME_TIMESTAMP_ILLEGAL",
      `Cannot store ${what} as consumeTimestampMs is set but consumeFromWhere is ${from}: ${
        String(config.consumeTimestampMs)
      }`,
    );
  }
  checkInteger(config.retryMaxTimes, RETRY_MAX_TIMES_RANGE, what, "retryMaxTimes");
  checkInteger(config.retryQueueNums, RETRY_QUEUE_NUMS_RANGE, what, "retryQueueNums");
  checkBackoff(config.retryBackoffMs, what);
}

function checkBackoff(backoff: unknown, what: string): void {
  if (backoff === null) return;
  if (!Array.isArray(backoff) || backoff.length < 1 || backoff.length > RETRY_BACKOFF_STEPS_MAX) {
    throw new MetadataError(
      "RETRY_BACKOFF_ILLEGAL",
      `Cannot store ${what} as retryBackoffMs is not null nor a list of 1..${RETRY_BACKOFF_STEPS_MAX} steps: ${
        JSON.stringify(backoff)
      }`,
    );
  }
  for (const [step, delayMs] of backoff.entries()) {
    checkInteger(delayMs, RETRY_BACKOFF_STEP_RANGE, what, `retryBackoffMs[${step}]`);
  }
}

function encodeAttributes(attributes: unknown, what: string): string {
  const isRecord = typeof attributes === "object" && attributes !== null &&
    Object.getPrototypeOf(attributes) === Object.prototype;
  if (!isRecord || !Object.values(attributes).every((value) => typeof value === "string")) {
    throw new MetadataError(
      "ATTRIBUTES_ILLEGAL",
      `Cannot store ${what} as attributes is not an object of string values`,
    );
  }
  const json = JSON.stringify(attributes);
  const bytes = new TextEncoder().encode(json).byteLength;
  if (bytes > TOPIC_ATTRIBUTES_JSON_BYTES_MAX) {
    throw new MetadataError(
      "ATTRIBUTES_ILLEGAL",
      `Cannot store ${what} as attributes exceed TOPIC_ATTRIBUTES_JSON_BYTES_MAX: ${bytes} > ${TOPIC_ATTRIBUTES_JSON_BYTES_MAX} bytes of JSON`,
    );
  }
  return json;
}

/** The integers a field accepts, and the code that refuses the rest. */
export interface IntegerRange {
  readonly min: number;
  readonly max: number;
  readonly code: MetadataErrorCode;
}

const QUEUE_NUMS_RANGE: IntegerRange = { min: 1, max: QUEUE_NUMS_MAX, code: "QUEUE_NUMS_ILLEGAL" };
const PERM_RANGE: IntegerRange = { min: 0, max: PERM_MAX, code: "PERM_ILLEGAL" };
const CONSUME_TIMESTAMP_RANGE: IntegerRange = {
  min: 0,
  max: Number.MAX_SAFE_INTEGER,
  code: "CONSUME_TIMESTAMP_ILLEGAL",
};
const RETRY_MAX_TIMES_RANGE: IntegerRange = {
  min: 0,
  max: RETRY_MAX_TIMES_MAX,
  code: "RETRY_MAX_TIMES_ILLEGAL",
};
const RETRY_QUEUE_NUMS_RANGE: IntegerRange = { ...QUEUE_NUMS_RANGE, min: 0 };
const RETRY_BACKOFF_STEP_RANGE: IntegerRange = {
  min: 1,
  max: RETRY_BACKOFF_MS_MAX,
  code: "RETRY_BACKOFF_ILLEGAL",
};

/** Refuses anything but an integer in the range: inputs may come from JSON, not TypeScript.
 * `what` names the record and `field` the setting, for the message. */
export function checkInteger(
  value: unknown,
  range: IntegerRange,
  what: string,
  field: string,
): asserts value is number {
  const { min, max, code } = range;
  if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max) return;
  throw new MetadataError(
    code,
    `Cannot store ${what} as ${field} is not an integer in ${min}..${max}: ${String(value)}`,
  );
}

function checkBoolean(value: unknown, what: string, field: string): void {
  if (typeof value === "boolean") return;
  throw new MetadataError(
    "FLAG_ILLEGAL",
    `Cannot store ${what} as ${field} is not true or false: ${String(value)}`,
  );
}

/** Names are the caller's to validate; an empty or non-string one is our bug. */
export function assertName(name: unknown): asserts name is string {
  assert(typeof name === "string" && name.length > 0, "metadata names are non-empty strings");
}

function toTopicConfig(row: typeof topicConfig.$inferSelect): TopicConfig {
  const { attributesJson, ...settings } = row;
  const attributes: unknown = JSON.parse(attributesJson);
  assert(typeof attributes === "object" && attributes !== null, "stored attributes are an object");
  return { ...settings, attributes: attributes as Record<string, string> };
}

function toConsumerGroupConfig(row: typeof consumerGroup.$inferSelect): ConsumerGroupConfig {
  const backoff: unknown = row.retryBackoffMsJson === null
    ? null
    : JSON.parse(row.retryBackoffMsJson);
  assert(backoff === null || Array.isArray(backoff), "stored backoff is null or a list");
  const { retryBackoffMsJson: _, ...settings } = row;
  return { ...settings, retryBackoffMs: backoff as number[] | null };
}
