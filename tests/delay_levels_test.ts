// Delay levels through SCHEDULE_TOPIC_XXXX, in a real broker process (Deno and Bun): a
// delayed message appears in its real queue no earlier than its level's delay, keeps its
// id, properties and body, and survives a SIGKILL of the broker while it waits.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";

const env = {
  MQ_DELAY_LEVELS: "300ms 600ms 1s",
  MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
  MQ_DELAY_OFFSET_PERSIST_MS: "100",
};

for (const runtime of RUNTIMES) {
  Deno.test(`delay levels on ${runtime}: never early, same message, survive SIGKILL`, async () => {
    const dataDir = tempDir(`delay-${runtime}`);
    try {
      let ids: string[] = [];
      const deliverAt = new Map<string, number>();
      let firstId = "";
      let deadAt = 0;
      {
        await using b = await startBroker(runtime, { dataDir, env });
        const mq = b.client;
        await mq.upsertTopic("Later", { readQueueNums: 1, writeQueueNums: 1 });
        const sent = Date.now();
        const r = await mq.produce("Later", {
          body: "in 300 ms",
          delayLevel: 1,
          tag: "x",
          properties: { k: "v" },
        });
        firstId = r.messageId;
        assert.equal(r.queueOffset, -1);
        assert.ok(r.deliverAt! >= sent + 300);
        // Not there before its time. A machine slow enough to answer this pull after
        // deliverAt may find it (its store time is checked below).
        const before = await mq.pull("Later", 0, { offset: 0 });
        if (before.status !== "NO_NEW_MESSAGE") {
          assert.ok(Date.now() >= r.deliverAt!, "not there before its time");
        }
        const got = await mq.pull("Later", 0, { offset: 0, waitMs: 5000 });
        const arrived = Date.now();
        assert.equal(got.messages.length, 1);
        const m = got.messages[0];
        assert.equal(m.body, "in 300 ms");
        assert.equal(m.messageId, r.messageId);
        assert.equal(m.tag, "x");
        // The time it was due stays as TIMER_DELIVER_MS (gRPC's delivery_timestamp).
        assert.deepEqual(m.properties, { k: "v", TIMER_DELIVER_MS: String(r.deliverAt) });
        assert.ok(m.storeTimestamp >= r.deliverAt!, "delivered early");
        assert.ok(arrived - sent >= 300);
        // Park several on the 1 s level, then kill the broker, before they are due unless
        // the machine is slow.
        for (let i = 0; i < 5; i++) {
          const p = await mq.produce("Later", { body: `k${i}`, delayLevel: 3 });
          ids.push(p.messageId);
          deliverAt.set(p.messageId, p.deliverAt!);
        }
        await b.kill();
        deadAt = Date.now(); // it stored nothing after this
      }
      {
        await using b = await startBroker(runtime, { dataDir, env });
        // Every parked message must come, in order, and nothing else. At-least-once: a
        // message re-put before the kill comes again if the kill beat the persist of its
        // level's offset (every 100 ms): the 300 ms message, and parked ones that fell due
        // before the kill. So wait for the distinct parked ids: counting a repeat as one of
        // them stopped the loop one short whenever the last parked one came in a later page.
        const seen: string[] = [];
        const parked = () => [...new Set(seen)].filter((id) => id !== firstId);
        let offset = 1;
        const deadline = Date.now() + 10_000;
        while (parked().length < ids.length && Date.now() < deadline) {
          const page = await b.client.pull("Later", 0, { offset, waitMs: 2000 });
          for (const m of page.messages) {
            seen.push(m.messageId);
            if (deliverAt.has(m.messageId)) {
              assert.ok(m.storeTimestamp >= deliverAt.get(m.messageId)!, "delivered early");
            }
          }
          offset = page.nextOffset;
        }
        assert.deepEqual(parked(), ids);
        for (const id of new Set(seen)) {
          const times = seen.filter((s) => s === id).length;
          const dueBeforeKill = id !== firstId && deliverAt.get(id)! <= deadAt;
          assert.ok(times <= (dueBeforeKill ? 2 : 1), `${id} came ${times} times`);
        }
        ids = [];
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
