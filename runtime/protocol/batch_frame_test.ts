// The binary batch frame: what the SDK writes (client/batch_frame.ts) reads back field for
// field, and every malformed frame is refused whole with a typed error.
import assert from "node:assert/strict";
import fc from "fast-check";
import { BrokerError } from "./errors.ts";
import { BATCH_FRAME_TYPE, decodeBatchFrame } from "./batch_frame.ts";
import { BATCH_FRAME_TYPE as SDK_TYPE, encodeBatchFrame } from "../../client/batch_frame.ts";

const bytes = (...b: number[]) => new Uint8Array(b);
const isCode = (code: string) => (err: unknown) => err instanceof BrokerError && err.code === code;
const malformed = isCode("INVALID_PARAMETER");

Deno.test("batch frame: every field round-trips, bodies are views of the frame", () => {
  assert.equal(SDK_TYPE, BATCH_FRAME_TYPE);
  const full = {
    body: bytes(0, 1, 255),
    tag: "tägA",
    keys: ["k1", "", "键"],
    shardingKey: "order-7",
    queueId: 3,
    delayLevel: 2,
    delayMs: 1500,
    deliverAt: 1_800_000_000_000,
    properties: { a: "1", "__proto__": "x", "é": "😀" },
    idempotencyKey: "idem-1",
    contentType: "application/octet-stream",
    messageId: "mine-1",
  };
  const frame = encodeBatchFrame([full, { body: "text é" }, { body: new Uint8Array(0) }]);
  const [a, b, c] = decodeBatchFrame(frame, 64);
  assert.deepEqual(a.body, full.body);
  assert.equal(a.body.buffer, frame.buffer, "no copy");
  assert.deepEqual({ ...a, body: undefined, properties: { ...a.properties } }, {
    ...full,
    body: undefined,
    properties: { ...full.properties },
  });
  assert.equal(Object.getPrototypeOf(a.properties), null, "__proto__ is a name, not a prototype");
  assert.deepEqual(b, { body: new TextEncoder().encode("text é") });
  assert.deepEqual(c, { body: new Uint8Array(0) });
});

Deno.test("batch frame: malformed frames are refused whole with INVALID_PARAMETER", () => {
  const good = encodeBatchFrame([{ body: bytes(1, 2), tag: "t", keys: ["k"] }, { body: "x" }]);
  const refuse = (frame: Uint8Array, why: RegExp) =>
    assert.throws(() => decodeBatchFrame(frame, 64), (e) => malformed(e) && why.test(String(e)));
  refuse(bytes(), /header/);
  refuse(Uint8Array.from([0x45, 0x4d, 0x51, 0x43, 1, 0, 0, 0, 1]), /EMQB/);
  refuse(Uint8Array.from([...good.subarray(0, 4), 2, ...good.subarray(5)]), /version 2/);
  refuse(Uint8Array.from([...good, 0]), /1 bytes after the last item/);
  // Every cut of a good frame runs past its end somewhere.
  for (let n = 0; n < good.length; n++) refuse(good.subarray(0, n), /past the end|cannot fit/);
  const unknownBit = good.slice();
  unknownBit[9] = 0x08; // fields of item 0: bit 11, past messageId
  refuse(unknownBit, /unknown field bits/);
  const notUtf8 = encodeBatchFrame([{ body: bytes(), tag: "ab" }]);
  notUtf8[notUtf8.length - 1] = 0xff;
  refuse(notUtf8, /tag at byte \d+ is not UTF-8/);
  const hugeCount = good.slice();
  new DataView(hugeCount.buffer).setUint32(5, 0xffffffff);
  refuse(hugeCount, /item count 4294967295 cannot fit/);
  const hugeKeys = encodeBatchFrame([{ body: bytes(), keys: ["k"] }]);
  new DataView(hugeKeys.buffer).setUint32(15, 1_000_000);
  refuse(hugeKeys, /key count 1000000 cannot fit/);
});

Deno.test("batch frame: no items, or more than itemsMax, is TOO_MANY_ITEMS", () => {
  assert.throws(() => decodeBatchFrame(encodeBatchFrame([]), 64), isCode("TOO_MANY_ITEMS"));
  const three = encodeBatchFrame([{ body: "a" }, { body: "b" }, { body: "c" }]);
  assert.throws(() => decodeBatchFrame(three, 2), isCode("TOO_MANY_ITEMS"));
  assert.equal(decodeBatchFrame(three, 3).length, 3);
});

Deno.test("batch frame: random bytes are read or refused with a BrokerError, never anything else", () => {
  const good = encodeBatchFrame([{ body: bytes(9), properties: { p: "v" }, delayMs: 5 }]);
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 64 }),
      fc.nat(good.length - 1),
      fc.uint8Array({ minLength: 1, maxLength: 4 }),
      (random, at, patch) => {
        for (const frame of [random, Uint8Array.from([...good.subarray(0, at), ...patch])]) {
          try {
            decodeBatchFrame(frame, 64);
          } catch (err) {
            if (!(err instanceof BrokerError)) throw err;
          }
        }
      },
    ),
    { numRuns: 2000 },
  );
});
