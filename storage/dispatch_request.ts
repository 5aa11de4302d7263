// What dispatch (RocketMQ's reput) hands to each derived structure for one record.
// Built at append time from what the put already knows, or at recovery by parsing
// the record; both paths feed the same dispatchers.
import {
  PROPERTY_DELAY,
  PROPERTY_KEYS,
  PROPERTY_TAGS,
  PROPERTY_UNIQ_KEY,
  SCHEDULE_TOPIC,
} from "./message/message_const.ts";
import type { MessageRecord } from "./message/record.ts";
import { javaStringHashCode, SYSFLAG_TRANSACTION_MASK } from "./message/record.ts";

export const TRANSACTION_NOT_TYPE = 0;
export const TRANSACTION_PREPARED_TYPE = 4;
export const TRANSACTION_COMMIT_TYPE = 8;
export const TRANSACTION_ROLLBACK_TYPE = 12;

export interface DispatchRequest {
  topic: string;
  queueId: number;
  commitLogOffset: number;
  msgSize: number;
  /** Java String.hashCode of TAGS, sign-extended; 0 without tags. */
  tagsCode: number;
  storeTimestamp: number;
  consumeQueueOffset: number;
  /** KEYS split on one space, empty parts dropped. */
  keys: string[];
  uniqKey: string | undefined;
  sysFlag: number;
}

export function tagsCodeOf(tags: string | undefined): number {
  return tags ? javaStringHashCode(tags) : 0;
}

/** RocketMQ's messageDelayLevel ("1s 5s ... 2h") as milliseconds; level N is index N-1. */
export function parseDelayLevels(text: string): number[] {
  // s, m, h and d as RocketMQ; ms is ours (short levels for tests).
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  return text.trim().split(/\s+/).map((part) => {
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(part);
    if (!m) {
      throw new Error(`Bad delay level ${JSON.stringify(part)}: use a number and s, m, h or d`);
    }
    return Number(m[1]) * unit[m[2]];
  });
}

/**
 * tagsCode of a ConsumeQueue unit: the tag hash, except in SCHEDULE_TOPIC_XXXX, where it is
 * the delivery time = store time + the level's delay (level capped at the table's length; a
 * level with no entry gives store + 1000), as RocketMQ computes it when building the entry.
 */
export function consumeQueueTagsCode(
  topic: string,
  properties: Map<string, string>,
  storeTimestamp: number,
  delayLevelsMs: readonly number[],
): number {
  if (topic === SCHEDULE_TOPIC) {
    const level = Math.min(Number(properties.get(PROPERTY_DELAY) ?? 0), delayLevelsMs.length);
    return storeTimestamp + (level >= 1 ? delayLevelsMs[level - 1] : 1000);
  }
  return tagsCodeOf(properties.get(PROPERTY_TAGS));
}

export function keysOf(keys: string | undefined): string[] {
  return keys ? keys.split(" ").filter((k) => k.length > 0) : [];
}

export function dispatchRequestOf(
  record: MessageRecord,
  delayLevelsMs: readonly number[],
): DispatchRequest {
  return {
    topic: record.topic,
    queueId: record.queueId,
    commitLogOffset: record.physicalOffset,
    msgSize: record.totalSize,
    tagsCode: consumeQueueTagsCode(
      record.topic,
      record.properties,
      record.storeTimestamp,
      delayLevelsMs,
    ),
    storeTimestamp: record.storeTimestamp,
    consumeQueueOffset: record.queueOffset,
    keys: keysOf(record.properties.get(PROPERTY_KEYS)),
    uniqKey: record.properties.get(PROPERTY_UNIQ_KEY),
    sysFlag: record.sysFlag,
  };
}

/** ConsumeQueue entries are built for NOT_TYPE and COMMIT records only. */
export function buildsConsumeQueue(sysFlag: number): boolean {
  const type = sysFlag & SYSFLAG_TRANSACTION_MASK;
  return type === TRANSACTION_NOT_TYPE || type === TRANSACTION_COMMIT_TYPE;
}
