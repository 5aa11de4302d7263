import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import type { PopMessage } from "../../runtime/protocol/types.ts";
import { MessageType, toDeliveredMessage, toProduceMessage } from "./message.ts";
import { Names } from "./resources.ts";

Deno.test("toProduceMessage() maps the message group to the sharding key and the delivery time to deliverAt", () => {
  const m = toProduceMessage({
    topic: { name: "orders" },
    userProperties: { region: "eu" },
    systemProperties: {
      tag: "created",
      keys: ["k1", "k2"],
      messageId: "01AABBCC",
      messageType: MessageType.FIFO,
      messageGroup: "cart-1",
      deliveryTimestamp: { seconds: 1_800_000_000, nanos: 5e6 },
    },
    body: new Uint8Array([1, 2, 3]),
  });
  assert.deepEqual(m, {
    body: new Uint8Array([1, 2, 3]),
    messageId: "01AABBCC",
    tag: "created",
    keys: ["k1", "k2"],
    shardingKey: "cart-1",
    deliverAt: 1_800_000_000_005,
    properties: { region: "eu" },
  });
  assert.throws(
    () => toProduceMessage({ systemProperties: { bodyEncoding: 2 }, body: new Uint8Array(1) }),
    { code: "INVALID_PARAMETER" },
  );
});

Deno.test("toDeliveredMessage() gives the MD5 digest, the attempt, the group and only user properties", () => {
  const pop: PopMessage = {
    messageId: "01FF",
    topic: "ns%orders",
    queueId: 2,
    queueOffset: 7,
    commitLogOffset: 100,
    body: Buffer.from("hello").toString("base64"),
    bodyEncoding: "base64",
    tag: "t",
    keys: ["a"],
    properties: { region: "eu", TIMER_DELIVER_MS: "1800000000000", REAL_TOPIC: "x" },
    bornTimestamp: 1_700_000_000_123,
    storeTimestamp: 1_700_000_000_456,
    reconsumeTimes: 2,
    shardingKey: "g1",
    receiptHandle: "H",
    invisibleUntil: 0,
  };
  const out = toDeliveredMessage(pop, new Names(), "ns", "127.0.0.1") as {
    topic: unknown;
    userProperties: unknown;
    systemProperties: Record<string, unknown>;
    body: Buffer;
  };
  assert.deepEqual(out.topic, { resourceNamespace: "ns", name: "orders" });
  assert.deepEqual(out.userProperties, { region: "eu" });
  assert.equal(out.body.toString(), "hello");
  const sys = out.systemProperties;
  assert.deepEqual(sys.bodyDigest, {
    type: 2,
    checksum: createHash("md5").update("hello").digest("hex").toUpperCase(),
  });
  assert.equal(sys.deliveryAttempt, 3);
  assert.equal(sys.messageGroup, "g1");
  assert.equal(sys.messageType, MessageType.FIFO);
  assert.equal(sys.receiptHandle, "H");
  assert.deepEqual(sys.bornTimestamp, { seconds: 1_700_000_000, nanos: 123e6 });
});

Deno.test("Names: a namespace is a name prefix, and the header wins over the resource", () => {
  const names = new Names();
  assert.equal(names.inward({ name: "orders" }, "", "topic"), "orders");
  assert.equal(names.inward({ name: "orders", resourceNamespace: "a" }, "", "topic"), "a%orders");
  assert.equal(names.inward({ name: "orders", resourceNamespace: "a" }, "b", "topic"), "b%orders");
  assert.throws(() => names.inward({}, "", "topic"), { code: "INVALID_NAME" });
  assert.deepEqual(names.outward("b%orders", "b"), { resourceNamespace: "b", name: "orders" });
});
