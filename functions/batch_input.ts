// Turning the items of a JSON batch into ProduceMessages (the produce batch route and
// schedules): zod schemas, so apart from produce_input.ts, which the first produce loads.
import { fromBase64 } from "./base64.ts";
import { z } from "@hono/zod-openapi";
import { BrokerError } from "../runtime/protocol/errors.ts";
import type { ProduceMessage } from "../runtime/protocol/types.ts";
import {
  checkIdempotencyKey,
  checkKeys,
  checkTag,
  checkText,
  CONTENT_TYPE_CHARS_MAX,
  SHARDING_KEY_CHARS_MAX,
} from "../runtime/protocol/produce_rules.ts";
import type { InputLimits } from "./produce_input.ts";

export const batchEnvelope = z.object({ messages: z.array(z.unknown()) }).strict();

export const batchItem = z.object({
  body: z.string(),
  bodyEncoding: z.enum(["utf8", "base64"]).optional(),
  tag: z.string().optional(),
  keys: z.array(z.string()).optional(),
  shardingKey: z.string().optional(),
  queueId: z.number().int().min(0).max(65535).optional(),
  delayLevel: z.number().int().min(0).max(1000).optional(),
  delayMs: z.number().int().min(0).optional(),
  deliverAt: z.number().int().min(0).optional(),
  properties: z.record(z.string(), z.string()).optional(),
  idempotencyKey: z.string().optional(),
  contentType: z.string().optional(),
  messageId: z.string().optional(),
}).strict().openapi("MessageInput", {
  description: "One message in JSON: body is text, or base64 with bodyEncoding",
});

/** One batch item; throws a BrokerError describing the first problem. */
export function messageFromItem(item: unknown, limits: InputLimits): ProduceMessage {
  const parsed = batchItem.safeParse(item);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot read message: ${issue.path.join(".") || "item"}: ${issue.message}`,
    );
  }
  const v = parsed.data;
  let body: Uint8Array;
  if (v.bodyEncoding === "base64") {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v.body) || v.body.length % 4 !== 0) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot decode body: bodyEncoding is base64 but body is not valid base64",
      );
    }
    body = fromBase64(v.body);
  } else {
    body = new TextEncoder().encode(v.body);
  }
  return messageFromFields(v, body, limits);
}

/** The fields of a batch item whose types and number ranges are checked (by the item's
 * schema, or frame_input.ts for a binary frame). */
export type ItemFields = Omit<z.infer<typeof batchItem>, "body" | "bodyEncoding">;

/** A batch item's message: the value checks every item passes, JSON or binary. */
export function messageFromFields(
  v: ItemFields,
  body: Uint8Array,
  limits: InputLimits,
): ProduceMessage {
  const m: ProduceMessage = { body };
  if (v.tag !== undefined) m.tag = checkTag(v.tag);
  if (v.keys !== undefined) m.keys = checkKeys(v.keys);
  if (v.shardingKey !== undefined) {
    m.shardingKey = checkText("shardingKey", v.shardingKey, SHARDING_KEY_CHARS_MAX);
  }
  if (v.queueId !== undefined) m.queueId = v.queueId;
  if (v.delayLevel !== undefined) m.delayLevel = v.delayLevel;
  if (v.delayMs !== undefined) m.delayMs = v.delayMs;
  if (v.deliverAt !== undefined) m.deliverAt = v.deliverAt;
  if (v.messageId !== undefined) m.messageId = v.messageId;
  if (v.contentType !== undefined) {
    m.contentType = checkText("contentType", v.contentType, CONTENT_TYPE_CHARS_MAX);
  }
  if (v.idempotencyKey !== undefined) {
    m.idempotencyKey = checkIdempotencyKey(v.idempotencyKey, limits.idempotencyKeyBytesMax);
  }
  if (v.properties !== undefined) {
    if (Object.keys(v.properties).length > limits.userPropertiesMax) {
      throw new BrokerError(
        "INVALID_PROPERTY",
        `Cannot set more than ${limits.userPropertiesMax} properties`,
      );
    }
    m.properties = v.properties;
  }
  return m;
}
