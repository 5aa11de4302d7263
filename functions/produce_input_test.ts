// Header values arrive as ByteStrings (one character per byte): a text header is read as
// UTF-8, and bytes that are not UTF-8 are refused (issue #19, point 6).
import assert from "node:assert/strict";
import { BrokerError } from "../runtime/protocol/errors.ts";
import { messageFromHeaders, readProduceHeaders, utf8Header } from "./produce_input.ts";

const limits = { idempotencyKeyBytesMax: 64, userPropertiesMax: 4 };
/** The ByteString a runtime hands over for these bytes. */
const bytes = (...b: number[]) => String.fromCharCode(...b);
const message = (headers: Record<string, string>) =>
  messageFromHeaders(readProduceHeaders(new Headers(headers)), new Uint8Array(), limits);
const invalidHeader = (name: string) => (err: unknown) => {
  assert.ok(err instanceof BrokerError);
  assert.equal(err.type, "/problems/invalid-header");
  assert.equal(err.message, `Cannot read ${name}: its bytes are not valid UTF-8`);
  return true;
};

Deno.test("utf8Header() returns ASCII as is and decodes UTF-8 bytes", () => {
  assert.equal(utf8Header("Mq-Tag", "TagA"), "TagA");
  assert.equal(utf8Header("Mq-Tag", bytes(0xc3, 0xa9)), "é");
  assert.equal(utf8Header("Mq-Tag", bytes(0xe2, 0x82, 0xac, 0x41)), "€A");
  assert.equal(utf8Header("Mq-Tag", bytes(0xef, 0xbb, 0xbf, 0x41)), "\ufeffA");
});

Deno.test("utf8Header() refuses bytes that are not UTF-8", () => {
  for (
    const b of [[0xff, 0xfe], [0xc3], [0x41, 0x80, 0x42], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]
  ) {
    assert.throws(() => utf8Header("Mq-Tag", bytes(...b)), invalidHeader("Mq-Tag"), String(b));
  }
  assert.throws(() => utf8Header("Mq-Tag", "\u0100"), invalidHeader("Mq-Tag"));
});

Deno.test("messageFromHeaders() reads tag, sharding key, content type and properties as UTF-8", () => {
  const e = bytes(0xc3, 0xa9);
  assert.deepEqual(
    message({
      "mq-tag": e,
      "mq-sharding-key": e,
      "content-type": `text/${e}`,
      "mq-prop-city": `Li${e}ge`,
    }),
    {
      body: new Uint8Array(),
      tag: "é",
      shardingKey: "é",
      contentType: "text/é",
      properties: { city: "Liége" },
    },
  );
  const bad = bytes(0xff);
  assert.throws(() => message({ "mq-tag": bad }), invalidHeader("Mq-Tag"));
  assert.throws(() => message({ "mq-sharding-key": bad }), invalidHeader("Mq-Sharding-Key"));
  assert.throws(() => message({ "content-type": bad }), invalidHeader("Content-Type"));
  assert.throws(() => message({ "mq-prop-city": bad }), invalidHeader("Mq-Prop-city"));
});
