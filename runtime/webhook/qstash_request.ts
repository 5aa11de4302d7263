// The request of one delivery attempt in the QStash dialect (docs/qstash.md): to the
// message's own destination, with the headers its publisher forwarded and the ones QStash
// sets (Upstash-Message-Id, the same on every retry; Upstash-Retried; Upstash-Signature,
// the JWT Receiver.verify checks), instead of Standard Webhooks' webhook-* and mq-* headers.
import { PROPERTY_CONTENT_TYPE } from "../../storage/message/message_const.ts";
import type { MessageRecord } from "../../storage/message/record.ts";
import { QSTASH_PROPERTY, QSTASH_URL_GROUP_PREFIX } from "../protocol/qstash.ts";
import type { Entry } from "./delivery_cursor.ts";
import type {
  QstashDelivery,
  QstashOutcome,
  StoredSubscription,
  WebhookRequest,
  WebhookResponse,
} from "./delivery_types.ts";

/** The destination of a message: its own, or the subscription's (a URL group endpoint). */
export function qstashUrl(sub: StoredSubscription, record: MessageRecord): string {
  return record.properties.get(QSTASH_PROPERTY.url) ?? sub.url;
}

/** The URL group of an endpoint's subscription (its topic is `qstash-g-<group>`). */
export function qstashUrlGroup(sub: StoredSubscription): string {
  return sub.topic.slice(QSTASH_URL_GROUP_PREFIX.length);
}

/** Retries the message asked for, or undefined to use the group's. */
export function qstashRetries(record: MessageRecord): number | undefined {
  const text = record.properties.get(QSTASH_PROPERTY.retries);
  return text === undefined ? undefined : Number(text);
}

export function qstashRequest(
  sub: StoredSubscription,
  qstash: QstashDelivery,
  entry: Entry,
  attempt: number,
  signal: AbortSignal,
): WebhookRequest {
  const record = entry.record;
  const props = record.properties;
  const url = qstashUrl(sub, record);
  const forwarded = props.get(QSTASH_PROPERTY.headers);
  const headers: Record<string, string> = {
    ...sub.headers,
    ...(forwarded ? JSON.parse(forwarded) as Record<string, string> : {}),
    "user-agent": "Upstash-QStash",
    "upstash-message-id": entry.id,
    "upstash-retried": String(attempt - 1),
    "upstash-signature": qstash.sign(url, record.body),
  };
  const contentType = props.get(PROPERTY_CONTENT_TYPE);
  if (contentType !== undefined) headers["content-type"] = contentType;
  if (sub.url !== "") headers["upstash-topic-name"] = qstashUrlGroup(sub);
  const schedule = props.get(QSTASH_PROPERTY.scheduleId);
  if (schedule !== undefined) headers["upstash-schedule-id"] = schedule;
  const timeout = props.get(QSTASH_PROPERTY.timeout);
  const timeoutMs = timeout === undefined ? sub.timeoutMs : Number(timeout);
  const method = props.get(QSTASH_PROPERTY.method) as WebhookRequest["method"];
  return { url, ...(method ? { method } : {}), headers, body: record.body, timeoutMs, signal };
}

/** What the broker is told when a message is delivered or dead-lettered. */
export function qstashOutcome(
  sub: StoredSubscription,
  topic: string,
  entry: Entry,
  attempt: number,
  maxRetries: number,
  response: WebhookResponse | undefined,
  deadLettered: boolean,
): QstashOutcome {
  return {
    group: sub.group,
    topic,
    messageId: entry.id,
    record: entry.record,
    url: qstashUrl(sub, entry.record),
    ...(sub.url !== "" ? { urlGroup: qstashUrlGroup(sub) } : {}),
    status: response?.status ?? 0,
    responseBody: response?.bodyPrefix ?? "",
    retried: attempt - 1,
    maxRetries,
    deadLettered,
  };
}
