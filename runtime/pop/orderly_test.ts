// OrderlyPop keeps which message of each queue is out under a key of (group, topic, queue).
// Names may hold `|`, so the key must not be a `|`-joined string (issue #19, point 6).
import assert from "node:assert/strict";
import { withBroker } from "../../tests/support/broker_testing.ts";

Deno.test("OrderlyPop: group a|b on topic c and group a on topic b|c are different queues", async () => {
  await withBroker({}, async (broker) => {
    for (const [group, topic] of [["a|b", "c"], ["a", "b|c"]]) {
      await broker.upsertTopic(topic, { readQueueNums: 1, writeQueueNums: 1, order: true });
      await broker.upsertGroup(group, { orderly: true, consumeFromWhere: "FIRST_OFFSET" });
      await broker.produce(topic, { body: new TextEncoder().encode(topic) });
    }
    const first = await broker.receive("a|b", { topic: "c", waitMs: 0 });
    assert.deepEqual(first.map((m) => m.topic), ["c"]);
    // Group a's queue 0 of b|c has no message out: it must not be taken for a|b's of c.
    const second = await broker.receive("a", { topic: "b|c", waitMs: 0 });
    assert.deepEqual(second.map((m) => m.topic), ["b|c"]);
    // While group a|b's message is out, its queue stays closed to it.
    assert.deepEqual(await broker.receive("a|b", { topic: "c", waitMs: 0 }), []);
  });
});
