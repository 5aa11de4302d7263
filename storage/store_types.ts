// The values the message store hands its callers: results of puts, reads and replicated
// appends, its gauges, and the log it writes to. message_store.ts re-exports them.
import type { MessageRecord } from "./message/record.ts";

export type Durability = "WRITTEN" | "FLUSHED";

export interface PutResult {
  topic: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  size: number;
  storeTimestamp: number;
  durability: Durability;
}

export type GetMessageStatus =
  | "FOUND"
  | "NO_MATCHED_MESSAGE"
  | "NO_MATCHED_LOGIC_QUEUE"
  | "NO_MESSAGE_IN_QUEUE"
  | "OFFSET_TOO_SMALL"
  | "OFFSET_OVERFLOW_ONE"
  | "OFFSET_OVERFLOW_BADLY"
  | "OFFSET_FOUND_NULL";

export interface StoredMessage {
  queueOffset: number;
  record: MessageRecord;
  /** The record's bytes as stored (RocketMQ's layout): a remoting pull sends them as is. */
  bytes: Uint8Array;
}

export interface GetMessageResult {
  status: GetMessageStatus;
  messages: StoredMessage[];
  nextBeginOffset: number;
  minOffset: number;
  maxOffset: number;
}

/** Tag filter: undefined or "*" matches all; otherwise the set of tags (`A || B`). */
export interface MessageFilter {
  tags?: Set<string>;
}

export type ArrivalListener = (topic: string, queueId: number, maxOffset: number) => void;

/** What appendReplicated() placed: [fromOffset, toOffset) of the CommitLog. */
export interface ReplicatedAppend {
  fromOffset: number;
  toOffset: number;
  records: number;
  durability: Durability;
}

export interface StoreLog {
  (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>): void;
}

/** The store's gauges (metrics, health and tests), read in one call. */
export interface StoreStats {
  /** End of the written CommitLog (maxPhysicalOffset). */
  wroteOffset: number;
  /** CommitLog bytes below this were fdatasync'ed. */
  flushedOffset: number;
  /** Offset below which consumers may read (see MessageStore.confirmOffset). */
  confirmOffset: number;
  /** ConsumeQueues and index hold every record below this. */
  dispatchedOffset: number;
  /** Start of the oldest CommitLog segment kept. */
  minPhysicalOffset: number;
  /** CommitLog segment files. */
  segments: number;
  /** Times the store stopped or resumed taking writes for a fault (write_gate.ts). */
  writableChanges: number;
  /** Reads that met a record whose checks (body CRC, length, offset) failed since open. */
  corruptReads: number;
  writable: boolean;
}
