// The HTTP request of one delivery attempt: the subscription's headers, the Standard
// Webhooks id, timestamp and signature, and the mq-* headers from the message.
import {
  PROPERTY_CONTENT_TYPE,
  PROPERTY_KEYS,
  PROPERTY_ORIGIN_QUEUE_ID,
  PROPERTY_ORIGIN_QUEUE_OFFSET,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_SHARDING_KEY,
  PROPERTY_TAGS,
} from "../../storage/message/message_const.ts";
import type { Cursor, Entry } from "./delivery_cursor.ts";
import type { StoredSubscription, WebhookRequest } from "./delivery_types.ts";
import { signatureHeader, type SigningKey } from "./signing.ts";

/** The request for `entry`'s attempt number `attempt`, signed with `signingKeys`. */
export function deliveryRequest(
  sub: StoredSubscription,
  signingKeys: SigningKey[],
  cursor: Cursor,
  entry: Entry,
  attempt: number,
  nowMs: number,
  signal: AbortSignal,
): WebhookRequest {
  const record = entry.record;
  const props = record.properties;
  const id = entry.id;
  const timestamp = Math.floor(nowMs / 1000);
  const headers: Record<string, string> = {
    ...sub.headers,
    "content-type": props.get(PROPERTY_CONTENT_TYPE) ?? "application/octet-stream",
    "user-agent": "edgemq-webhook/1",
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(signingKeys, id, timestamp, record.body),
    "mq-message-id": id,
    "mq-topic": cursor.retry ? props.get(PROPERTY_RETRY_TOPIC) ?? sub.topic : cursor.topic,
    "mq-queue-id": props.get(PROPERTY_ORIGIN_QUEUE_ID) ?? String(cursor.queueId),
    "mq-queue-offset": props.get(PROPERTY_ORIGIN_QUEUE_OFFSET) ?? String(entry.offset),
    "mq-reconsume-times": String(attempt - 1),
    "mq-born-timestamp": String(record.bornTimestamp),
  };
  const tag = props.get(PROPERTY_TAGS);
  if (tag !== undefined) headers["mq-tag"] = tag;
  const keys = props.get(PROPERTY_KEYS);
  if (keys !== undefined) headers["mq-keys"] = keys;
  const sharding = props.get(PROPERTY_SHARDING_KEY);
  if (sharding !== undefined) headers["mq-sharding-key"] = sharding;
  return {
    url: sub.url,
    headers,
    body: record.body,
    timeoutMs: sub.timeoutMs,
    signal,
  };
}
