// The records of a transaction and how they are read back (reference/rocketmq.md §16).
// Everything a transaction is lives in the CommitLog, so nothing can disagree with it:
//
//   RMQ_SYS_TRANS_HALF_TOPIC q0   the half message: body, user properties, UNIQ_KEY (= the
//                                 transaction id), REAL_TOPIC, REAL_QID, TRAN_MSG, PGROUP;
//                                 re-put with TRANSACTION_CHECK_TIMES = n before check n
//   RMQ_SYS_TRANS_OP_HALF_TOPIC q0 one op record per decision: tag "d", body = the half
//                                 queue offset + "," (RocketMQ's), UNIQ_KEY = the
//                                 transaction id, __TRAN_OP = COMMIT | ROLLBACK | DISCARD
//                                 (the rest of a decided view is read from the half record)
//   real topic, REAL_QID          the committed message, same UNIQ_KEY, body and properties
//
// The index keys every record by topic#UNIQ_KEY, so "was it decided?" and "was the commit
// put?" are index lookups, valid after any crash (the index is rebuilt from the log).
import type { MessageStore } from "../../storage/message_store.ts";
import type { MessageRecord } from "../../storage/message/record.ts";
import {
  PROPERTY_CONTENT_TYPE,
  PROPERTY_KEYS,
  PROPERTY_PRODUCER_GROUP,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_SHARDING_KEY,
  PROPERTY_TAGS,
  PROPERTY_TRANSACTION_CHECK_TIMES,
  PROPERTY_TRANSACTION_ID,
  PROPERTY_TRANSACTION_OP,
  PROPERTY_TRANSACTION_PREPARED,
  PROPERTY_UNIQ_KEY,
  TRANS_HALF_TOPIC,
  TRANS_OP_TOPIC,
} from "../../storage/message/message_const.ts";
import type { ProduceMessage } from "../protocol/types.ts";
import type { TransactionState, TransactionView } from "../protocol/transaction_types.ts";
import { LOOPBACK } from "./store_host.ts";

export type OpDecision = "COMMIT" | "ROLLBACK" | "DISCARD";

/** What a commit needs of the half record: read from the log, or kept from begin. */
export type HalfCopy = Pick<
  MessageRecord,
  "body" | "properties" | "bornTimestamp" | "physicalOffset"
>;

/** An undecided transaction as the check service tracks it; `halfOffset` and
 * `commitLogOffset` name its newest half record. */
export interface PendingTx {
  transactionId: string;
  topic: string;
  queueId: number;
  producerGroup: string;
  halfOffset: number;
  commitLogOffset: number;
  bornTimestamp: number;
  checks: number;
  dueAt: number;
  /** False for one loaded from the log at start: it may have been decided before the
   * crash (op record, or commit put without its op), which the index tells. */
  verified: boolean;
  checking: boolean;
  deciding?: Promise<TransactionView>;
  /** The half record as begin stored it, while transactionHalfCacheBytesMax allows. */
  half?: HalfCopy;
}

const EVERYTHING = { beginTimestamp: 0, endTimestamp: Number.MAX_SAFE_INTEGER };

/** The half record's properties: the produce's own plus where it really goes. */
export function halfProperties(
  message: ProduceMessage,
  transactionId: string,
  place: { topic: string; queueId: number; producerGroup: string },
): Map<string, string> {
  const properties = new Map<string, string>();
  const user = message.properties;
  if (user !== undefined) { for (const k in user) properties.set(k, user[k]); }
  if (message.tag !== undefined) properties.set(PROPERTY_TAGS, message.tag);
  if (message.keys?.length) properties.set(PROPERTY_KEYS, message.keys.join(" "));
  properties.set(PROPERTY_UNIQ_KEY, transactionId);
  if (message.shardingKey !== undefined) {
    properties.set(PROPERTY_SHARDING_KEY, message.shardingKey);
  }
  if (message.contentType !== undefined) {
    properties.set(PROPERTY_CONTENT_TYPE, message.contentType);
  }
  properties.set(PROPERTY_REAL_TOPIC, place.topic);
  properties.set(PROPERTY_REAL_QUEUE_ID, String(place.queueId));
  properties.set(PROPERTY_TRANSACTION_PREPARED, "true");
  properties.set(PROPERTY_PRODUCER_GROUP, place.producerGroup);
  properties.set(PROPERTY_TRANSACTION_ID, transactionId);
  return properties;
}

/** The committed message: the half record in its real queue, REAL_* and TRAN_MSG removed,
 * born time kept, preparedTransactionOffset = the half record (EndTransactionProcessor). */
export function commitInput(half: HalfCopy, tx: PendingTx) {
  const properties = new Map(half.properties);
  for (
    const k of [
      PROPERTY_REAL_TOPIC,
      PROPERTY_REAL_QUEUE_ID,
      PROPERTY_TRANSACTION_PREPARED,
      PROPERTY_PRODUCER_GROUP,
      PROPERTY_TRANSACTION_CHECK_TIMES,
    ]
  ) properties.delete(k);
  return {
    topic: tx.topic,
    queueId: tx.queueId,
    body: half.body,
    properties,
    bornTimestamp: half.bornTimestamp,
    bornHost: LOOPBACK,
    preparedTransactionOffset: half.physicalOffset,
  };
}

/** The half record again, one check later (RocketMQ re-puts before it asks). */
export function recheckInput(half: MessageRecord, checks: number) {
  const properties = new Map(half.properties);
  properties.set(PROPERTY_TRANSACTION_CHECK_TIMES, String(checks));
  return {
    topic: TRANS_HALF_TOPIC,
    queueId: 0,
    body: half.body,
    properties,
    bornTimestamp: half.bornTimestamp,
    bornHost: LOOPBACK,
  };
}

const ascii = new TextEncoder();

/** The op record: what was decided, nothing more (where the message went, its group and its
 * checks are in its newest half record: viewFromOp reads them there). */
export function opInput(tx: PendingTx, decision: OpDecision, nowMs: number) {
  const properties = new Map<string, string>([
    [PROPERTY_TAGS, "d"],
    [PROPERTY_UNIQ_KEY, tx.transactionId],
    [PROPERTY_TRANSACTION_OP, decision],
  ]);
  return {
    topic: TRANS_OP_TOPIC,
    queueId: 0,
    body: ascii.encode(`${tx.halfOffset},`),
    properties,
    bornTimestamp: nowMs,
    bornHost: LOOPBACK,
  };
}

/** A half record read at start, as an undecided transaction to verify. */
export function pendingFromHalf(
  record: MessageRecord,
  queueOffset: number,
  delays: { timeoutMs: number; intervalMs: number },
): PendingTx | undefined {
  const p = record.properties;
  const transactionId = p.get(PROPERTY_TRANSACTION_ID);
  const topic = p.get(PROPERTY_REAL_TOPIC);
  if (transactionId === undefined || topic === undefined) return undefined;
  const checks = Number(p.get(PROPERTY_TRANSACTION_CHECK_TIMES) ?? 0);
  return {
    transactionId,
    topic,
    queueId: Number(p.get(PROPERTY_REAL_QUEUE_ID) ?? 0),
    producerGroup: p.get(PROPERTY_PRODUCER_GROUP) ?? "",
    halfOffset: queueOffset,
    commitLogOffset: record.physicalOffset,
    bornTimestamp: record.bornTimestamp,
    checks,
    dueAt: record.storeTimestamp + (checks === 0 ? delays.timeoutMs : delays.intervalMs),
    verified: false,
    checking: false,
  };
}

const STATE_OF_OP: Record<string, TransactionState> = {
  COMMIT: "COMMITTED",
  ROLLBACK: "ROLLED_BACK",
  DISCARD: "DISCARDED",
};

/** The decided view an op record tells, with what the newest half record says. */
export function viewFromOp(op: MessageRecord, half: MessageRecord | undefined): TransactionView {
  const id = op.properties.get(PROPERTY_UNIQ_KEY) ?? "";
  const p = half?.properties ?? new Map<string, string>();
  return {
    transactionId: id,
    messageId: id,
    topic: p.get(PROPERTY_REAL_TOPIC) ?? "",
    queueId: Number(p.get(PROPERTY_REAL_QUEUE_ID) ?? 0),
    producerGroup: p.get(PROPERTY_PRODUCER_GROUP) ?? "",
    state: STATE_OF_OP[op.properties.get(PROPERTY_TRANSACTION_OP) ?? ""] ?? "DISCARDED",
    checks: Number(p.get(PROPERTY_TRANSACTION_CHECK_TIMES) ?? 0),
    bornTimestamp: half?.bornTimestamp ?? op.bornTimestamp,
    decidedAt: op.storeTimestamp,
  };
}

/** The op record of `transactionId`, if it was decided (within retention). */
export function findOp(store: MessageStore, transactionId: string): MessageRecord | undefined {
  return store.queryMessage(TRANS_OP_TOPIC, transactionId, { maxNum: 4, ...EVERYTHING })
    .find((r) => r.properties.get(PROPERTY_UNIQ_KEY) === transactionId);
}

/** The newest half record of `transactionId`. */
export function findHalf(store: MessageStore, transactionId: string): MessageRecord | undefined {
  return store.queryMessage(TRANS_HALF_TOPIC, transactionId, { maxNum: 64, ...EVERYTHING })
    .filter((r) => r.properties.get(PROPERTY_UNIQ_KEY) === transactionId)
    .sort((a, b) => b.physicalOffset - a.physicalOffset)[0];
}

/** Whether the committed message is in its real topic already (a crash between the commit's
 * put and its op record). */
export function commitWasPut(store: MessageStore, tx: PendingTx): boolean {
  return store.queryMessage(tx.topic, tx.transactionId, { maxNum: 4, ...EVERYTHING })
    .some((r) =>
      r.properties.get(PROPERTY_UNIQ_KEY) === tx.transactionId &&
      r.properties.get(PROPERTY_TRANSACTION_ID) === tx.transactionId
    );
}
