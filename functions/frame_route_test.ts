// The batch route reads a binary batch frame (runtime/protocol/batch_frame.ts) as it reads
// JSON: per-item results for bad values, and a malformed frame refused whole with nothing
// handed to the broker.
import assert from "node:assert/strict";
import { createApp } from "./app.ts";
import { TEST_LIMITS } from "./testing.ts";
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import type { ProduceMessage } from "../runtime/protocol/types.ts";
import { encodeBatchFrame } from "../client/batch_frame.ts";
import { BATCH_FRAME_TYPE } from "../runtime/protocol/batch_frame.ts";

async function appWithBatches() {
  const stored: ProduceMessage[][] = [];
  const broker = {
    produceBatch(topic: string, ms: ProduceMessage[]) {
      stored.push(ms);
      return Promise.resolve(ms.map((_, i) => ({
        ok: true as const,
        messageId: `m${i}`,
        topic,
        queueId: 0,
        queueOffset: i,
        commitLogOffset: 0,
        storeTimestamp: 1,
        durability: "WRITTEN" as const,
      })));
    },
  } as unknown as BrokerClient;
  const app = await createApp({
    broker: { get: () => Promise.resolve(broker), failed: () => {} },
    apiKeys: [],
    limits: TEST_LIMITS,
    log: () => {},
  });
  const post = (body: Uint8Array, type = BATCH_FRAME_TYPE) =>
    app.request("/v1/topics/T/messages/batch", {
      method: "POST",
      headers: { "content-type": type },
      body: body as BodyInit,
    });
  return { post, stored };
}

Deno.test("batch route: a frame's items are stored as sent, bad values fail alone", async () => {
  const { post, stored } = await appWithBatches();
  const res = await post(encodeBatchFrame([
    { body: new Uint8Array([1, 2, 3]), tag: "a", keys: ["k"], delayMs: 10, properties: { p: "v" } },
    { body: "x", delayLevel: 1.5 },
    { body: "y", queueId: 70000 },
    { body: "z", idempotencyKey: "i".repeat(65), contentType: "text/plain" },
    { body: new Uint8Array(2000) },
    { body: "ok", messageId: "mine", shardingKey: "s" },
  ]));
  assert.equal(res.status, 200);
  const out = await res.json();
  assert.deepEqual(out.results.map((r: { ok: boolean }) => r.ok), [
    true,
    false,
    false,
    false,
    false,
    true,
  ]);
  assert.match(out.results[1].error.detail, /delayLevel: 1.5 is not a whole number/);
  assert.match(out.results[2].error.detail, /queueId: 70000/);
  assert.equal(out.results[4].error.code, "MESSAGE_TOO_LARGE");
  assert.equal(out.results[5].index, undefined);
  assert.equal(stored.length, 1);
  const [first, last] = stored[0];
  assert.deepEqual(first.body, new Uint8Array([1, 2, 3]));
  assert.deepEqual(
    { ...first, body: undefined, properties: { ...first.properties } },
    { body: undefined, tag: "a", keys: ["k"], delayMs: 10, properties: { p: "v" } },
  );
  assert.deepEqual(last, {
    body: new TextEncoder().encode("ok"),
    messageId: "mine",
    shardingKey: "s",
  });
});

Deno.test("batch route: a malformed frame is a 400 problem and nothing reaches the broker", async () => {
  const { post, stored } = await appWithBatches();
  const good = encodeBatchFrame([{ body: "a" }, { body: "b" }]);
  for (
    const [frame, type] of [
      [good.subarray(0, good.length - 1), BATCH_FRAME_TYPE],
      [Uint8Array.from([...good, 0]), BATCH_FRAME_TYPE],
      [new TextEncoder().encode(`{"messages":[{"body":"a"}]}`), BATCH_FRAME_TYPE],
      [good, "application/json"],
      [good, `${BATCH_FRAME_TYPE}x`],
    ] as const
  ) {
    const res = await post(frame, type);
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("content-type"), "application/problem+json");
    const p = await res.json();
    assert.ok(["INVALID_PARAMETER", "INVALID_JSON"].includes(p.code), p.code);
  }
  assert.equal((await post(good, `${BATCH_FRAME_TYPE}; v=1`)).status, 200, "parameters allowed");
  stored.length = 0;
  const many = encodeBatchFrame(Array.from({ length: 11 }, () => ({ body: "a" })));
  assert.equal((await (await post(many)).json()).code, "TOO_MANY_ITEMS");
  assert.equal(stored.length, 0);
});
