// POP progress as the offsets API shows it, and one copy of a message per receive answer
// (issue #19, point 8).
import assert from "node:assert/strict";
import type { Broker } from "../broker.ts";
import { withBroker } from "../../tests/support/broker_testing.ts";

const body = (text: string) => new TextEncoder().encode(text);

async function setUp(broker: Broker, messages: number): Promise<string[]> {
  await broker.upsertTopic("T", { readQueueNums: 1, writeQueueNums: 1 });
  await broker.upsertGroup("g", { consumeFromWhere: "FIRST_OFFSET" });
  const ids = [];
  for (let i = 0; i < messages; i++) {
    ids.push((await broker.produce("T", { body: body(`m${i}`) })).messageId);
  }
  return ids;
}

Deno.test("ConsumerOffsets: a POP group's progress shows in its offsets, and a reset moves it", async () => {
  await withBroker({}, async (broker) => {
    const ids = await setUp(broker, 3);
    const got = await broker.receive("g", { topic: "T", max: 2 });
    assert.deepEqual(got.map((m) => m.messageId), ids.slice(0, 2));
    const view = await broker.getOffsets("g", "T");
    assert.deepEqual(
      view.queues.map((q) => ({ offset: q.offset, lag: q.lag })),
      [{ offset: 2, lag: 1 }],
    );
    assert.equal(view.totalLag, 1);

    const reset = await broker.resetOffsetsByTime("g", "T", 0);
    assert.equal(reset.queues[0].offset, 0);
    const again = await broker.receive("g", { topic: "T", max: 10 });
    assert.deepEqual(again.map((m) => m.messageId), ids, "POP goes on from the reset offset");
  });
});

Deno.test("PopService.receive(): one answer carries a message once, its retry copy kept", async () => {
  await withBroker({}, async (broker) => {
    const [id] = await setUp(broker, 1);
    const [first] = await broker.receive("g", { topic: "T", invisibleMs: 10 });
    assert.equal(first.messageId, id);
    // As after a kill -9: the pop offset goes back before the message, whose checkpoint
    // has meanwhile put a retry copy into %RETRY%g. The next receive reads both.
    await broker.resetOffsetsByTime("g", "T", 0);
    for (let i = 0; i < 200 && broker.store.getMaxOffsetInQueue("%RETRY%g", 0) === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(broker.store.getMaxOffsetInQueue("%RETRY%g", 0), 1, "no retry copy was made");
    const answer = await broker.receive("g", { topic: "T", max: 10, invisibleMs: 60_000 });
    assert.deepEqual(answer.map((m) => [m.messageId, m.reconsumeTimes]), [[id, 1]]);
    // The dropped copy left nothing behind: once the kept one is acked, nothing comes back.
    await broker.ack("g", answer[0].receiptHandle);
    assert.deepEqual(await broker.receive("g", { topic: "T", max: 10 }), []);
  });
});
