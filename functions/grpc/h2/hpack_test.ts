// The request-header decoder's dynamic table (RFC 7541 §4): bounded by its size, evicting
// the oldest entries, and resized by the client's dynamic table size updates.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { HeaderDecoder } from "./hpack.ts";

/** A literal with incremental indexing, new name (§6.2.1), short strings, no Huffman. */
const indexed = (name: string, value: string) =>
  Buffer.concat([
    Buffer.from([0x40, name.length]),
    Buffer.from(name),
    Buffer.from([value.length]),
    Buffer.from(value),
  ]);

/** An indexed header field (§6.1) for index `i` (7-bit prefix integer). */
function ref(i: number): Buffer {
  if (i < 127) return Buffer.from([0x80 | i]);
  const out = [0xff];
  for (i -= 127; i >= 128; i >>>= 7) out.push((i & 0x7f) | 0x80);
  out.push(i);
  return Buffer.from(out);
}

Deno.test("hpack: the dynamic table evicts beyond its size (no growth per request)", () => {
  const d = new HeaderDecoder(4096, 16_384);
  // As grpc-js sends x-mq-request-id: a new value, indexed, on every request.
  const ids: string[] = [];
  for (let i = 0; i < 500; i++) {
    ids.push(crypto.randomUUID());
    assert.equal(d.decode(indexed("x-mq-request-id", ids[i])).get("x-mq-request-id"), ids[i]);
  }
  // The newest entry is index 62; 4096 bytes hold 4096 / (15 + 36 + 32) = 49 of them.
  assert.equal(d.decode(ref(62)).get("x-mq-request-id"), ids[499]);
  assert.equal(d.decode(ref(62 + 48)).get("x-mq-request-id"), ids[499 - 48]);
  assert.throws(() => d.decode(ref(62 + 49)), "an evicted entry is out of the table");
});

Deno.test("hpack: a dynamic table size update is applied, one above the maximum refused", () => {
  const d = new HeaderDecoder(4096, 16_384);
  d.decode(indexed("a", "1"));
  // Size update to 0 (0x20): the table empties; then to 4096 (0x3f e1 1f) and a header.
  assert.deepEqual([...d.decode(Buffer.concat([Buffer.from([0x20]), ref(2)]))], [[
    ":method",
    "GET",
  ]]);
  assert.throws(() => d.decode(ref(62)), "the table was emptied");
  const again = new HeaderDecoder(4096, 16_384);
  assert.equal(
    again.decode(Buffer.concat([Buffer.from([0x3f, 0xe1, 0x1f]), indexed("b", "2")])).get("b"),
    "2",
  );
  assert.equal(again.decode(ref(62)).get("b"), "2");
  // 4097 (0x3f e2 1f) is over SETTINGS_HEADER_TABLE_SIZE (4096): a decoding error.
  assert.throws(() => new HeaderDecoder(4096, 16_384).decode(Buffer.from([0x3f, 0xe2, 0x1f])));
});
