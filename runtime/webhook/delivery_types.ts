// The webhook engine's types: the transport it calls, the deps and settings it is given,
// a subscription as stored. A leaf, so the service and its runner share them without
// importing each other.
import type { MessageStore } from "../../storage/message_store.ts";
import type { SubscriptionStatus } from "../protocol/types.ts";
import type { Logger } from "../log.ts";
import type { WebhookMethod } from "./http_delivery.ts";
import type { MessageRecord } from "../../storage/message/record.ts";

export interface WebhookRequest {
  url: string;
  /** POST when absent. */
  method?: WebhookMethod;
  headers: Record<string, string>;
  body: Uint8Array;
  timeoutMs: number;
  signal: AbortSignal;
}

export interface WebhookResponse {
  status: number;
  /** The Retry-After header as sent, if any. */
  retryAfter: string | null;
  /** The first bytes of the response body (for the delivery log). */
  bodyPrefix: string;
}

/** Sends one request to a subscription's endpoint; rejects on timeout, refused address or
 * connection failure with an Error whose message goes to the delivery log. */
export type WebhookTransport = (request: WebhookRequest) => Promise<WebhookResponse>;

export interface WebhookSettings {
  webhookReadAheadPerQueue: number;
  /** Messages and bytes read per refill of one cursor. */
  webhookReadBatchNums: number;
  webhookReadBytesMax: number;
  /** Refills per cursor per pump, so one busy queue cannot hold the event loop. */
  webhookRefillsPerPump: number;
  /** A retry copy that could not be stored is tried again after this long, ms. */
  webhookStoreRetryMs: number;
  webhookRetryAfterMaxMs: number;
  webhookLogEntriesMax: number;
  webhookShutdownGraceMs: number;
}

/** A subscription as stored: the API input with every default applied and secrets in full. */
export interface StoredSubscription {
  group: string;
  topic: string;
  tags: string;
  url: string;
  secrets: string[];
  headers: Record<string, string>;
  timeoutMs: number;
  maxConcurrency: number;
  ratePerSec: number;
  ordered: boolean;
  failureCallbackUrl: string | null;
  /** Absent: Standard Webhooks. "qstash": qstash_request.ts builds each request. */
  dialect?: "qstash";
  status: SubscriptionStatus;
  statusReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface RetryPolicy {
  retryMaxTimes: number;
  /** The group's own backoff list, or null for RocketMQ's ladder. */
  backoffList: number[] | null;
  /** The delay before the delivery after `reconsumeTimes` failed ones. */
  backoffMs(reconsumeTimes: number): number;
}

/** What a delivery in the QStash dialect needs from the broker (runtime/core/qstash.ts). */
export interface QstashDelivery {
  /** The Upstash-Signature JWT of one attempt to deliver `body` to `url`. */
  sign(url: string, body: Uint8Array): string;
  /** A message's last attempt: delivered (2xx) or dead-lettered; callbacks go out here. */
  settled(outcome: QstashOutcome): void;
}

export interface QstashOutcome {
  group: string;
  topic: string;
  messageId: string;
  record: MessageRecord;
  url: string;
  /** Set for a URL group endpoint. */
  urlGroup?: string;
  /** HTTP status of the last attempt, 0 when there was no response. */
  status: number;
  responseBody: string;
  /** Attempts after the first. */
  retried: number;
  maxRetries: number;
  deadLettered: boolean;
}

export interface WebhookDeps {
  /** Set when the broker serves the QStash dialect. */
  qstash?: QstashDelivery;
  store: MessageStore;
  offsets: {
    query(group: string, topic: string, queueId: number): number | undefined;
    commit(group: string, topic: string, queueId: number, offset: number): void;
  };
  transport: WebhookTransport;
  nowMs: () => number;
  log: Logger;
  storeHost: { ip: Uint8Array; port: number };
  settings: WebhookSettings;
  /** Read queues of a topic, or undefined when it does not exist (any more). */
  readQueueNums(topic: string): number | undefined;
  /** The group's retry policy (the subscription's group carries it). */
  retryPolicy(group: string): RetryPolicy;
  /** The tag filter of an expression; undefined for "*". */
  parseTags(expression: string): Set<string> | undefined;
  /** Persists a status change (410 disables). */
  saveStatus(group: string, status: SubscriptionStatus, reason: string | null): Promise<void>;
}
