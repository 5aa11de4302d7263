import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import fc from "fast-check";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  concatBytes,
  decodeBatch,
  offsetMessageId,
  offsetOfMessageId,
  parseProperties,
  plainBody,
  toProduceMessage,
} from "./message.ts";

Deno.test("toProduceMessage() maps RocketMQ's properties onto the core's fields", () => {
  const props = parseProperties(
    "TAGS\u0001T\u0002KEYS\u0001a b\u0002DELAY\u00013\u0002__SHARDING_KEY\u0001s\u0002" +
      "WAIT\u0001true\u0002UNIQ_KEY\u0001X\u0002color\u0001red\u0002",
  );
  assert.deepEqual(toProduceMessage(new Uint8Array([1]), props, 2), {
    body: new Uint8Array([1]),
    queueId: 2,
    tag: "T",
    keys: ["a", "b"],
    delayLevel: 3,
    shardingKey: "s",
    properties: { color: "red" },
  });
  assert.throws(
    () => toProduceMessage(new Uint8Array(), new Map([["DELAY", "x"]])),
    BrokerError,
  );
});

Deno.test("plainBody() inflates a ZLIB body and refuses LZ4/ZSTD and garbage", () => {
  const text = new TextEncoder().encode("y".repeat(5000));
  assert.deepEqual(plainBody(new Uint8Array(deflateSync(text)), 0x1), text);
  assert.equal(plainBody(text, 0), text);
  assert.throws(() => plainBody(text, 0x1 | (1 << 8)), BrokerError);
  assert.throws(() => plainBody(new Uint8Array([1, 2, 3]), 0x1), BrokerError);
});

Deno.test("decodeBatch() throws only BrokerError on random bodies", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 120 }), (bytes) => {
      try {
        decodeBatch(bytes);
      } catch (err) {
        assert.ok(err instanceof BrokerError, String(err));
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("offsetMessageId() and offsetOfMessageId() agree; concatBytes() views adjacent parts", () => {
  const id = offsetMessageId(new Uint8Array([127, 0, 0, 1]), 10911, 2 ** 40 + 5);
  assert.equal(id, "7F00000100002A9F0000010000000005");
  assert.equal(offsetOfMessageId(id), 2 ** 40 + 5);
  const arena = new Uint8Array([1, 2, 3, 4]);
  const joined = concatBytes([arena.subarray(0, 2), arena.subarray(2, 4)]);
  assert.equal(joined.buffer, arena.buffer);
  assert.deepEqual([...concatBytes([arena.subarray(2, 4), arena.subarray(0, 2)])], [3, 4, 1, 2]);
});
