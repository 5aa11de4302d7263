// popInflightMax in a real broker process (Deno and Bun): past the bound a receive gets
// only the room left, then nothing (it waits out its waitMs and answers empty, no error);
// acks make room again, and nothing is lost or handed out twice.
import assert from "node:assert/strict";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";

for (const runtime of RUNTIMES) {
  Deno.test(`POP on ${runtime}: popInflightMax bounds the messages in flight`, async () => {
    await using b = await startBroker(runtime, { env: { MQ_POP_INFLIGHT_MAX: "5" } });
    const mq = b.client;
    await mq.upsertTopic("Bounded", { readQueueNums: 2, writeQueueNums: 2 });
    await mq.upsertGroup("bounded");
    await mq.produceBatch(
      "Bounded",
      Array.from({ length: 12 }, (_, i) => ({ body: `m${i}` })),
    );
    const opts = { topic: "Bounded", max: 8, invisibleMs: 60_000 };

    const first = await mq.receive("bounded", opts);
    assert.equal(first.length, 5, "a receive takes only the room left");
    const waitedFrom = Date.now();
    assert.deepEqual(await mq.receive("bounded", { ...opts, waitMs: 300 }), [], "full: empty");
    assert.ok(Date.now() - waitedFrom >= 250, "a full receive waits out its waitMs");

    await mq.ackBatch("bounded", first.slice(0, 2).map((m) => m.receiptHandle));
    const second = await mq.receive("bounded", opts);
    assert.equal(second.length, 2, "acks make room for as many");

    const seen = new Set([...first, ...second].map((m) => m.body));
    for (let round = 0; round < 10 && seen.size < 12; round++) {
      const out = [...first.slice(2), ...second];
      await mq.ackBatch("bounded", out.map((m) => m.receiptHandle));
      first.length = 0;
      second.length = 0;
      const next = await mq.receive("bounded", opts);
      assert.ok(next.length <= 5);
      for (const m of next) {
        assert.ok(!seen.has(m.body), `${m.body} handed out twice`);
        seen.add(m.body);
      }
      second.push(...next);
    }
    assert.equal(seen.size, 12, "every message is received once");
  });
}
