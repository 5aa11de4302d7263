// The rules a message must meet to be produced, in one place: the HTTP edge calls the
// field checks to refuse early with header-specific errors, and the core's producer calls
// checkProduce() as the authority for every writer (HTTP, cron, in-process, later gRPC
// and remoting). Pure: no I/O, importable from functions/.
import { BrokerError } from "./errors.ts";
import { checkUserProperty } from "./names.ts";
import type { ProduceMessage } from "./types.ts";

export const TAG_CHARS_MAX = 128;
export const KEY_CHARS_MAX = 128;
export const KEYS_MAX = 32;
export const SHARDING_KEY_CHARS_MAX = 256;
export const CONTENT_TYPE_CHARS_MAX = 256;
/** A producer-made message id (RocketMQ 5 clients: 34 hex characters). */
export const MESSAGE_ID_CHARS_MAX = 128;
const VISIBLE = /^[\x21-\x7e]+$/;
// deno-lint-ignore no-control-regex -- refusing control characters is the point
const TEXT = /^[^\x00-\x1f\x7f]*$/;

/** What checkProduce() needs to know of the broker's settings. */
export interface ProduceRules {
  userPropertiesMax: number;
  idempotencyKeyBytesMax: number;
  /** How many delay levels there are (messageDelayLevel). */
  delayLevels: number;
  /** The messageDelayLevel text, quoted in errors. */
  delayLevelsText: string;
}

export function checkTag(tag: string): string {
  if (
    tag.length === 0 || tag.length > TAG_CHARS_MAX || !TEXT.test(tag) || tag.includes("||") ||
    tag.trim() !== tag
  ) {
    throw new BrokerError(
      "INVALID_HEADER",
      `Cannot use tag ${
        JSON.stringify(tag.slice(0, 200))
      }: 1-${TAG_CHARS_MAX} characters, no control characters, no "||", no outer spaces`,
    );
  }
  return tag;
}

export function checkKeys(keys: string[]): string[] {
  if (keys.length > KEYS_MAX) {
    throw new BrokerError("INVALID_HEADER", `Cannot use ${keys.length} keys: at most ${KEYS_MAX}`);
  }
  for (const k of keys) {
    if (k.length === 0 || k.length > KEY_CHARS_MAX || !VISIBLE.test(k)) {
      throw new BrokerError(
        "INVALID_HEADER",
        `Cannot use key ${
          JSON.stringify(k.slice(0, 200))
        }: 1-${KEY_CHARS_MAX} visible ASCII characters without spaces`,
      );
    }
  }
  return keys;
}

/** A one-line text field (sharding key, content type) of 1-`max` characters. */
export function checkText(what: string, value: string, max: number): string {
  if (value.length === 0 || value.length > max || !TEXT.test(value)) {
    throw new BrokerError(
      "INVALID_HEADER",
      `Cannot use ${what} ${
        JSON.stringify(value.slice(0, 100))
      }: 1-${max} characters without control characters`,
    );
  }
  return value;
}

export function checkIdempotencyKey(key: string, bytesMax: number): string {
  if (key.length === 0 || new TextEncoder().encode(key).length > bytesMax || !VISIBLE.test(key)) {
    throw new BrokerError(
      "INVALID_HEADER",
      `Cannot use Idempotency-Key: 1-${bytesMax} visible ASCII characters`,
    );
  }
  return key;
}

/**
 * Every rule a message must meet whoever produces it; throws the first broken one as a
 * BrokerError. The timer horizon and the queue range depend on the clock and the topic,
 * so the producer checks those itself.
 */
export function checkProduce(message: ProduceMessage, rules: ProduceRules): void {
  const { delayLevel, delayMs, deliverAt } = message;
  if (
    (delayMs !== undefined || deliverAt !== undefined) &&
    (delayLevel !== undefined || (delayMs !== undefined && deliverAt !== undefined))
  ) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      "Cannot combine Mq-Delay-Level, Mq-Delay-Ms and Mq-Deliver-At: use one",
    );
  }
  const level = delayLevel ?? 0;
  if (!Number.isInteger(level) || level < 0 || level > rules.delayLevels) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot use delay level ${level}: levels are 1-${rules.delayLevels} (${rules.delayLevelsText}), 0 for none`,
    );
  }
  const id = message.messageId;
  if (
    id !== undefined && (id.length === 0 || id.length > MESSAGE_ID_CHARS_MAX || !VISIBLE.test(id))
  ) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot use message id ${
        JSON.stringify(id.slice(0, 200))
      }: 1-${MESSAGE_ID_CHARS_MAX} visible ASCII characters`,
    );
  }
  const user = message.properties;
  if (user !== undefined) {
    let count = 0;
    for (const k in user) {
      checkUserProperty(k, user[k]);
      count++;
    }
    if (count > rules.userPropertiesMax) {
      throw new BrokerError(
        "INVALID_PROPERTY",
        `Cannot set ${count} properties; userPropertiesMax is ${rules.userPropertiesMax}`,
      );
    }
  }
  if (message.tag !== undefined) checkTag(message.tag);
  if (message.keys !== undefined) checkKeys(message.keys);
  if (message.shardingKey !== undefined) {
    checkText("shardingKey", message.shardingKey, SHARDING_KEY_CHARS_MAX);
  }
  if (message.contentType !== undefined) {
    checkText("contentType", message.contentType, CONTENT_TYPE_CHARS_MAX);
  }
  if (message.idempotencyKey !== undefined) {
    checkIdempotencyKey(message.idempotencyKey, rules.idempotencyKeyBytesMax);
  }
}
