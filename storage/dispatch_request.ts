// What dispatch (RocketMQ's reput) hands to each derived structure for one record.
// Built at append time from what the put already knows, or at recovery by parsing
// the record; both paths feed the same dispatchers.
import type { MessageRecord } from "./message/record.ts";
import { javaStringHashCode, SYSFLAG_TRANSACTION_MASK } from "./message/record.ts";

export const PROPERTY_TAGS = "TAGS";
export const PROPERTY_KEYS = "KEYS";
export const PROPERTY_UNIQ_KEY = "UNIQ_KEY";
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

export function keysOf(keys: string | undefined): string[] {
  return keys ? keys.split(" ").filter((k) => k.length > 0) : [];
}

export function dispatchRequestOf(record: MessageRecord): DispatchRequest {
  return {
    topic: record.topic,
    queueId: record.queueId,
    commitLogOffset: record.physicalOffset,
    msgSize: record.totalSize,
    tagsCode: tagsCodeOf(record.properties.get(PROPERTY_TAGS)),
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
