import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import type * as grpc from "@grpc/grpc-js";
import type { PopMessage, WireMessage } from "../../runtime/protocol/types.ts";
import { encodeDelivered } from "./delivered_wire.ts";
import { toDeliveredMessage } from "./message.ts";
import { loadMessagingService } from "./proto.ts";
import { Names } from "./resources.ts";

const service = loadMessagingService();
const def = (name: string): grpc.MethodDefinition<unknown, unknown> =>
  Object.values(service).find((d) => d.originalName === name)!;
const receive = def("receiveMessage");
const names = new Names();

/** What proto-loader's serializer makes of toDeliveredMessage's object. */
function reference(w: WireMessage | PopMessage, namespace: string): Buffer {
  return Buffer.from(
    receive.responseSerialize({
      message: toDeliveredMessage(w, names, namespace, "10.0.0.1:8081"),
    }),
  );
}

const base: PopMessage = {
  messageId: "0A0B0C0D0E0F00000000000000000001",
  topic: "orders",
  queueId: 0,
  queueOffset: 0,
  commitLogOffset: 0,
  body: "x".repeat(300),
  bodyEncoding: "utf8",
  properties: {},
  bornTimestamp: 1_700_000_000_123,
  storeTimestamp: 1_700_000_000_456,
  reconsumeTimes: 0,
  receiptHandle: "H".repeat(90),
  invisibleUntil: 0,
};

Deno.test("encodeDelivered() gives proto-loader's bytes: normal, FIFO, delayed, namespaced, pulled", () => {
  const cases: [WireMessage | PopMessage, string][] = [
    [base, ""],
    [{ ...base, tag: "t", keys: ["a", "b c"], shardingKey: "group-1", reconsumeTimes: 200 }, ""],
    [{
      ...base,
      topic: "ns%orders",
      properties: { region: "eu", TIMER_DELIVER_MS: "1800000000000" },
    }, "ns"],
    [{ ...base, body: Buffer.from([0, 255, 1]).toString("base64"), bodyEncoding: "base64" }, ""],
    [{ ...base, body: "héllo ✓ 🙂", queueId: 7, queueOffset: 2 ** 40 + 3 }, ""],
    [{ ...base, body: "y".repeat(70_000), properties: { k: "v".repeat(5000) } }, ""],
  ];
  const { receiptHandle: _, invisibleUntil: __, ...pulled } = base;
  cases.push([pulled, ""]);
  for (const [w, ns] of cases) {
    const got = encodeDelivered(w, names, ns, "10.0.0.1:8081");
    assert.deepEqual(got, reference(w, ns));
    // and it decodes back to the same message
    assert.deepEqual(
      receive.responseDeserialize(got),
      receive.responseDeserialize(reference(w, ns)),
    );
  }
});

Deno.test("encodeDelivered() equals proto-loader's bytes for any message (property)", () => {
  const text = fc.string({ unit: "grapheme", maxLength: 40 });
  fc.assert(
    fc.property(
      fc.record({
        tag: fc.option(text, { nil: undefined }),
        keys: fc.option(fc.array(text, { maxLength: 3 }), { nil: undefined }),
        shardingKey: fc.option(text, { nil: undefined }),
        body: fc.string({ unit: "binary", maxLength: 300 }),
        properties: fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), text, { maxKeys: 4 }),
        queueId: fc.integer({ min: 0, max: 1023 }),
        queueOffset: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        reconsumeTimes: fc.integer({ min: 0, max: 10_000 }),
        bornTimestamp: fc.integer({ min: 0, max: 4_000_000_000_000 }),
      }),
      (r) => {
        const w: PopMessage = { ...base, ...r };
        if (w.tag === undefined) delete w.tag;
        if (w.keys === undefined) delete w.keys;
        if (w.shardingKey === undefined) delete w.shardingKey;
        assert.deepEqual(
          encodeDelivered(w, names, "", "h:1"),
          Buffer.from(
            receive.responseSerialize({ message: toDeliveredMessage(w, names, "", "h:1") }),
          ),
        );
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("ReceiveMessage and PullMessage responses already encoded pass the serializer as they are", () => {
  const bytes = encodeDelivered(base, names, "", "h:1");
  for (const name of ["receiveMessage", "pullMessage"]) {
    const d = def(name);
    assert.deepEqual(Buffer.from(d.responseSerialize(bytes)), bytes);
    const back = d.responseDeserialize(bytes) as { message?: { body: Buffer } };
    assert.equal(back.message?.body.toString(), base.body);
  }
});
