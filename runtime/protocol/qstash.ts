// The QStash dialect (docs/qstash.md): the names the QStash front end (functions/qstash/)
// and the webhook engine (runtime/webhook/qstash_request.ts) agree on. A message published
// through /v2 carries its QStash settings as properties; a webhook subscription in the
// "qstash" dialect reads them per message. Pure: importable from functions/.

/** Properties a QStash message carries (names pass checkUserProperty). */
export const QSTASH_PROPERTY = {
  /** Destination URL, exactly as published (the JWT's `sub`). */
  url: "qstash.url",
  /** JSON object of headers forwarded to the destination (Upstash-Forward-*). */
  headers: "qstash.headers",
  /** The delivery's method when not POST (Upstash-Method). */
  method: "qstash.method",
  /** Per-attempt timeout in ms (Upstash-Timeout). */
  timeout: "qstash.timeout",
  /** Retries after the first attempt (Upstash-Retries). */
  retries: "qstash.retries",
  callback: "qstash.callback",
  failureCallback: "qstash.failure-callback",
  /** Set by the cron service on each tick it publishes. */
  scheduleId: "cronSchedule",
  queueName: "qstash.queue",
  /** Set on a callback message: the message it reports on. */
  callbackOf: "qstash.callback-of",
} as const;

/** Topic (and subscription group) of messages published to a URL outside any queue. */
export const QSTASH_PUBLISH_TOPIC = "qstash-publish";
/** Topic (and group) of callback and failure-callback messages. */
export const QSTASH_CALLBACK_TOPIC = "qstash-callbacks";
/** A queue named Q is topic and group `qstash-q-Q`. */
export const QSTASH_QUEUE_PREFIX = "qstash-q-";
/** Messages with flow-control key K go to topic and group `qstash-f-K`. */
export const QSTASH_FLOW_PREFIX = "qstash-f-";
/** A URL group named G is topic `qstash-g-G`; its endpoints are groups `qstash-g-G--<n>`. */
export const QSTASH_URL_GROUP_PREFIX = "qstash-g-";
export const QSTASH_ENDPOINT_SEPARATOR = "--";

/** The two keys deliveries are signed with (`sig_…`); `current` signs. */
export interface QstashSigningKeys {
  current: string;
  next: string;
}

/** What a schedule publishes at each tick (QstashApi.qstashSchedule). */
export interface QstashScheduleDetails {
  createdAt: number;
  /** base64 */
  body: string;
  contentType?: string;
  properties: Record<string, string>;
}

/** The broker's QStash settings the front end applies (runtime/config/qstash_settings.ts). */
export interface QstashSettings {
  retriesDefault: number;
  retriesMax: number;
  retryBackoffMs: number[];
  concurrency: number;
  /** The longest Upstash-Timeout (webhookTimeoutMsMax). */
  timeoutMsMax: number;
}
