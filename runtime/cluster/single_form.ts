// The batch item that stores exactly what a single produce of the same message over the
// SDK stores (runtime/cluster/produce_coalescer.ts): the broker's idempotency check
// compares tag, keys, sharding key, queue, properties and content type (producer.ts
// fingerprint), so a key's first send alone and its repeat inside a batch must agree.
// The single produce carries those fields in HTTP headers, which change some values on the
// way (names lowercased and sorted, values trimmed, keys split on spaces, only bytes 0-255);
// a message whose fields would change is not coalesced but sent alone, as before.
import type { ProduceMessage } from "../protocol/types.ts";

/** The SDK's single produce sends no content type as application/octet-stream. */
export const SINGLE_CONTENT_TYPE = "application/octet-stream";

/** Printable ASCII, no space at either end: a header value that arrives as sent. */
const HEADER_SAFE = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/;
const KEY_SAFE = /^[\x21-\x7e]+$/;
const NAME_SAFE = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

const safe = (v: string | undefined) => v === undefined || HEADER_SAFE.test(v);

/** `m` as a batch item stored as its single produce would be, or undefined when its
 * headers would change something (then it goes alone). */
export function singleForm(m: ProduceMessage): ProduceMessage | undefined {
  if (
    !safe(m.tag) || !safe(m.shardingKey) || !safe(m.idempotencyKey) || !safe(m.messageId) ||
    !safe(m.contentType)
  ) return undefined;
  if (m.keys !== undefined && (m.keys.length === 0 || !m.keys.every((k) => KEY_SAFE.test(k)))) {
    return undefined;
  }
  if (m.properties !== undefined) {
    const names = Object.keys(m.properties);
    if (names.length === 0) return undefined;
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (!NAME_SAFE.test(name) || (i > 0 && names[i - 1] >= name)) return undefined;
      if (!HEADER_SAFE.test(m.properties[name])) return undefined;
    }
  }
  return m.contentType === undefined ? { ...m, contentType: SINGLE_CONTENT_TYPE } : m;
}
