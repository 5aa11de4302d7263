// Turning HTTP input into ProduceMessages: the headers of a single produce (a batch's items:
// batch_input.ts, with zod, which the first produce does not load). Each check says what was
// wrong and the limit; nothing here touches the broker.
import { BrokerError } from "../runtime/protocol/errors.ts";
import { parseNonNegativeInt } from "../runtime/protocol/names.ts";
import type { ProduceMessage } from "../runtime/protocol/types.ts";
import {
  checkIdempotencyKey,
  checkKeys,
  checkTag,
  checkText,
  CONTENT_TYPE_CHARS_MAX,
  SHARDING_KEY_CHARS_MAX,
} from "../runtime/protocol/produce_rules.ts";

export interface InputLimits {
  idempotencyKeyBytesMax: number;
  userPropertiesMax: number;
}

/** The headers a single produce reads (lowercase, as Headers yields them). */
const READ_HEADER_NAMES = [
  "mq-tag",
  "mq-keys",
  "mq-sharding-key",
  "mq-queue-id",
  "mq-delay-ms",
  "mq-delay-level",
  "mq-deliver-at",
  "mq-message-id",
  "content-type",
  "idempotency-key",
  "mq-transaction",
  "mq-producer-group",
] as const;
type ReadHeader = (typeof READ_HEADER_NAMES)[number];
const READ_HEADERS: ReadonlySet<string> = new Set(READ_HEADER_NAMES);

/** What a single produce reads from its headers, gathered in one pass, not yet checked. */
export interface ProduceHeaders {
  found: Partial<Record<ReadHeader, string>>;
  properties: Record<string, string> | undefined;
  count: number;
  /** Content-Length as sent (readBody checks it), or null. */
  contentLength: string | null;
}

/**
 * One pass over the headers instead of a get() per name: on Deno each get() lowercases and
 * scans every header, Content-Length included.
 */
export function readProduceHeaders(headers: Headers): ProduceHeaders {
  const out: ProduceHeaders = { found: {}, properties: undefined, count: 0, contentLength: null };
  headers.forEach((value, name) => {
    if (READ_HEADERS.has(name)) out.found[name as ReadHeader] = value;
    else if (name === "content-length") out.contentLength = value;
    else if (name.startsWith("mq-prop-")) {
      (out.properties ??= Object.create(null) as Record<string, string>)[name.slice(8)] = value;
      out.count++;
    }
  });
  return out;
}

const NON_ASCII = /[\x80-\uffff]/;
// Stateless between calls (fatal, not streaming); ignoreBOM keeps a leading EF BB BF as the
// character it is instead of dropping it.
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * A text header's value read as UTF-8. Deno and Bun both hand a header value over as a
 * ByteString (one character per byte, 0-255: tests/header_bytes_test.ts checks it), so
 * `é` sent as C3 A9 arrives as "Ã©". ASCII, the common case, costs one regex test and is
 * returned as is; anything else is decoded, and bytes that are not UTF-8 are refused
 * (INVALID_HEADER) rather than stored as mojibake.
 */
export function utf8Header(name: string, value: string): string {
  if (!NON_ASCII.test(value)) return value;
  const bytes = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c > 0xff) return refuseBytes(name); // not a ByteString: no runtime gives one
    bytes[i] = c;
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    return refuseBytes(name);
  }
}

function refuseBytes(name: string): never {
  throw new BrokerError(
    "INVALID_HEADER",
    `Cannot read ${name}: its bytes are not valid UTF-8`,
  );
}

/** The message of a single produce: the raw body plus its Mq-* headers (readProduceHeaders). */
export function messageFromHeaders(
  headers: ProduceHeaders,
  body: Uint8Array,
  limits: InputLimits,
): ProduceMessage {
  const m: ProduceMessage = { body };
  // Values are checked here, in a fixed order, so the first error reported does not
  // depend on header order.
  const { found, properties, count } = headers;
  const tag = found["mq-tag"];
  if (tag !== undefined) m.tag = checkTag(utf8Header("Mq-Tag", tag));
  const keys = found["mq-keys"];
  if (keys !== undefined) m.keys = checkKeys(keys.split(" ").filter((k) => k.length > 0));
  const sharding = found["mq-sharding-key"];
  if (sharding !== undefined) {
    m.shardingKey = checkText(
      "Mq-Sharding-Key",
      utf8Header("Mq-Sharding-Key", sharding),
      SHARDING_KEY_CHARS_MAX,
    );
  }
  const queueId = parseNonNegativeInt("Mq-Queue-Id", found["mq-queue-id"], 65535);
  if (queueId !== undefined) m.queueId = queueId;
  const delay = parseNonNegativeInt("Mq-Delay-Ms", found["mq-delay-ms"]);
  if (delay !== undefined) m.delayMs = delay;
  const level = parseNonNegativeInt("Mq-Delay-Level", found["mq-delay-level"], 1000);
  if (level !== undefined) m.delayLevel = level;
  const at = parseNonNegativeInt("Mq-Deliver-At", found["mq-deliver-at"]);
  if (at !== undefined) m.deliverAt = at;
  const id = found["mq-message-id"];
  if (id !== undefined) m.messageId = utf8Header("Mq-Message-Id", id); // checked by checkProduce
  const contentType = found["content-type"];
  if (contentType !== undefined) {
    m.contentType = checkText(
      "Content-Type",
      utf8Header("Content-Type", contentType),
      CONTENT_TYPE_CHARS_MAX,
    );
  }
  const idem = found["idempotency-key"];
  if (idem !== undefined) {
    m.idempotencyKey = checkIdempotencyKey(idem, limits.idempotencyKeyBytesMax);
  }
  if (count > limits.userPropertiesMax) {
    throw new BrokerError(
      "INVALID_PROPERTY",
      `Cannot set ${count} properties: at most ${limits.userPropertiesMax}`,
    );
  }
  if (properties !== undefined) {
    // Our own prototype-less object (readProduceHeaders): decoded in place, then copied.
    for (const name in properties) {
      properties[name] = utf8Header(`Mq-Prop-${name}`, properties[name]);
    }
    m.properties = { ...properties };
  }
  return m;
}
