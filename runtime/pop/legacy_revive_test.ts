// Upgrade path: a POP checkpoint (CK) written by the timer-wheel POP (before in-memory
// checkpoints) is a timer addressed to the revive topic. When it fires after the upgrade,
// its message was not acked in time: it comes back through %RETRY%{group} with
// reconsumeTimes + 1, as the old revive loop did, instead of being ignored.
import assert from "node:assert/strict";
import {
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_UNIQ_KEY,
  REVIVE_TOPIC,
  TIMER_TOPIC,
} from "../../storage/message/message_const.ts";
import { LOOPBACK } from "../core/store_host.ts";
import { withBroker } from "../../tests/support/broker_testing.ts";

Deno.test("a timer-wheel POP checkpoint from before the upgrade brings its message back when it fires", async () => {
  await withBroker({}, async (broker) => {
    await broker.upsertTopic("T", { readQueueNums: 1, writeQueueNums: 1 });
    await broker.upsertGroup("g", { consumeFromWhere: "FIRST_OFFSET" });
    const { messageId } = await broker.produce("T", { body: new TextEncoder().encode("old") });
    // The old POP had received it: its pop offset is past the message (an ack here moves it).
    const [got] = await broker.receive("g", { topic: "T" });
    await broker.ack("g", got.receiptHandle);
    const record =
      broker.store.getMessage("T", 0, 0, { maxMsgNums: 1, maxBytes: 1 << 20 }).messages[0].record;
    // The old CK, due in 50 ms, as runtime/pop/checkpoint.ts wrote it before the upgrade.
    await broker.store.putMessage({
      topic: TIMER_TOPIC,
      queueId: 0,
      body: new TextEncoder().encode(
        JSON.stringify({ g: "g", t: "T", q: 0, o: 0, c: record.physicalOffset }),
      ),
      properties: new Map([
        [PROPERTY_UNIQ_KEY, "0".repeat(32)],
        [PROPERTY_REAL_TOPIC, REVIVE_TOPIC],
        [PROPERTY_REAL_QUEUE_ID, "0"],
        [PROPERTY_TIMER_DELIVER_MS, String(Date.now() + 50)],
      ]),
      bornTimestamp: Date.now(),
      bornHost: LOOPBACK,
      storeHost: LOOPBACK,
    });
    let back: Awaited<ReturnType<typeof broker.receive>> = [];
    for (let i = 0; i < 100 && back.length === 0; i++) {
      back = await broker.receive("g", { topic: "T", waitMs: 100 });
    }
    assert.deepEqual(back.map((m) => [m.messageId, m.reconsumeTimes, m.body]), [
      [messageId, 1, "old"],
    ]);
  });
});
