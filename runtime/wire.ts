// Stored records to wire messages, and BrokerErrors from store errors.
import type { MessageRecord } from "../storage/message/record.ts";
import { StoreError } from "../storage/errors.ts";
import { BrokerError } from "./protocol/errors.ts";
import type { WireMessage } from "./protocol/types.ts";
import type { BodyText } from "./platform/platform.ts";
import {
  PROPERTY_CONTENT_TYPE,
  PROPERTY_KEYS,
  PROPERTY_SHARDING_KEY,
  PROPERTY_TAGS,
  PROPERTY_UNIQ_KEY,
  PROPERTY_WAIT_STORE_MSG_OK,
} from "../storage/message/message_const.ts";

/** Properties the wire shows as fields of their own (or not at all), not in `properties`. */
const HIDDEN = new Set([
  PROPERTY_TAGS,
  PROPERTY_KEYS,
  PROPERTY_UNIQ_KEY,
  PROPERTY_CONTENT_TYPE,
  PROPERTY_SHARDING_KEY,
  PROPERTY_WAIT_STORE_MSG_OK,
]);
/**
 * `bodyText` is the platform's: the same decision (UTF-8 text without U+FFFD goes out as
 * text, anything else as base64) on every runtime, each by its faster way.
 */
export function toWireMessage(
  record: MessageRecord,
  queueOffset: number,
  bodyText: BodyText,
): WireMessage {
  const props = record.properties;
  const properties: Record<string, string> = {};
  for (const [k, v] of props) if (!HIDDEN.has(k)) properties[k] = v;
  let body = bodyText(record.body), bodyEncoding: "utf8" | "base64" = "utf8";
  if (body === undefined) {
    body = toBase64(record.body);
    bodyEncoding = "base64";
  }
  const keys = props.get(PROPERTY_KEYS);
  return {
    messageId: props.get(PROPERTY_UNIQ_KEY) ?? "",
    topic: record.topic,
    queueId: record.queueId,
    queueOffset,
    commitLogOffset: record.physicalOffset,
    body,
    bodyEncoding,
    ...(props.has(PROPERTY_TAGS) ? { tag: props.get(PROPERTY_TAGS) } : {}),
    ...(keys ? { keys: keys.split(" ").filter((k) => k) } : {}),
    properties,
    bornTimestamp: record.bornTimestamp,
    storeTimestamp: record.storeTimestamp,
    reconsumeTimes: record.reconsumeTimes,
    ...(props.has(PROPERTY_CONTENT_TYPE) ? { contentType: props.get(PROPERTY_CONTENT_TYPE) } : {}),
    ...(props.has(PROPERTY_SHARDING_KEY) ? { shardingKey: props.get(PROPERTY_SHARDING_KEY) } : {}),
  };
}

export function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

export function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Store refusals as catalogue errors; anything else passes through. */
export function fromStoreError(err: unknown): unknown {
  if (!(err instanceof StoreError)) return err;
  switch (err.code) {
    case "MESSAGE_TOO_LARGE":
      return new BrokerError("MESSAGE_TOO_LARGE", err.message, {}, { cause: err });
    case "PROPERTIES_SIZE_EXCEEDED":
      return new BrokerError("PROPERTIES_TOO_LARGE", err.message, {}, { cause: err });
    case "PROPERTY_ILLEGAL":
      return new BrokerError("INVALID_PROPERTY", err.message, {}, { cause: err });
    case "TOPIC_ILLEGAL":
      return new BrokerError("INVALID_NAME", err.message, {}, { cause: err });
    case "FLUSH_DISK_TIMEOUT":
      return new BrokerError("FLUSH_TIMEOUT", err.message, {}, { cause: err });
    case "STORE_NOT_WRITABLE":
      return new BrokerError("STORE_NOT_WRITABLE", err.message, {}, { cause: err });
    default:
      return new BrokerError("BAD_REQUEST", err.message, {}, { cause: err });
  }
}

/** "*" or empty: everything; otherwise tags split on "||" and trimmed (FilterAPI). */
export function parseTagExpression(expression: string | undefined): Set<string> | undefined {
  if (expression === undefined || expression.trim() === "" || expression.trim() === "*") {
    return undefined;
  }
  const tags = expression.split("||").map((t) => t.trim()).filter((t) => t.length > 0);
  if (tags.length === 0) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot parse tag expression ${JSON.stringify(expression)}`,
    );
  }
  return new Set(tags);
}
