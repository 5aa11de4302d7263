// Wire types of transactional messages (issue #23; RocketMQ's design in
// reference/rocketmq.md §16). Pure types: importable from functions/, browsers and edge
// runtimes.
import type { ProduceResult, WireMessage } from "./types.ts";

/** PREPARED: stored, not yet checked; CHECKING: the producer was asked at least once;
 * COMMITTED / ROLLED_BACK: decided; DISCARDED: transactionCheckMax checks went unanswered. */
export type TransactionState =
  | "PREPARED"
  | "CHECKING"
  | "COMMITTED"
  | "ROLLED_BACK"
  | "DISCARDED";

/** What a producer decides. */
export type TransactionDecision = "COMMIT" | "ROLLBACK";

/** What a producer answers a check: a decision, or UNKNOWN (ask again later). */
export type TransactionCheckAnswer = TransactionDecision | "UNKNOWN";

/** A half message stored: like a scheduled message, queueOffset is -1 until it is committed. */
export interface TransactionBegun extends ProduceResult {
  /** Equals messageId (RocketMQ: the UNIQ_KEY is the transaction id). */
  transactionId: string;
}

export interface TransactionView {
  transactionId: string;
  messageId: string;
  /** The real topic and queue the message goes to on commit. */
  topic: string;
  queueId: number;
  producerGroup: string;
  state: TransactionState;
  /** How many times the producer was asked. */
  checks: number;
  bornTimestamp: number;
  /** When it was decided (store time of its op record). */
  decidedAt?: number;
  /** The message as stored in the half topic, for operators (GET /v1/transactions/{id}). */
  message?: WireMessage;
}

/** One check-back: "what became of this transaction?" sent to a producer of its group. */
export interface TransactionCheck {
  transactionId: string;
  messageId: string;
  topic: string;
  queueId: number;
  producerGroup: string;
  /** This check's number, 1 to transactionCheckMax. */
  check: number;
  bornTimestamp: number;
  message: WireMessage;
}

/** PUT /v1/producer-groups/{group}/transaction-check. */
export interface TransactionCheckInput {
  url: string;
  /** Standard Webhooks secrets (whsec_…); one is generated when left out. */
  secrets?: string[];
}

export interface TransactionCheckView {
  producerGroup: string;
  url: string;
  /** In full only in the answer to the PUT that created them; masked afterwards. */
  secrets: string[];
}

export interface TransactionPollOptions {
  /** Longest wait for a first check (ms); 0 answers at once. */
  waitMs?: number;
  /** Most checks in one answer. */
  max?: number;
}
