// Timer messages (Mq-Delay-Ms / Mq-Deliver-At) in a real broker process, Deno and Bun:
// never early, past times at once, the horizon, cancel, reschedule, cancel by key, and
// thousands of pending timers across a SIGKILL.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";
import type { MqClient } from "../client/mod.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const env = { MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH" };

async function drain(
  mq: MqClient,
  topic: string,
  queues: number,
  until: (count: number) => boolean,
  deadlineMs = 20_000,
) {
  const got = [];
  const offsets = new Array(queues).fill(0);
  const end = Date.now() + deadlineMs;
  while (!until(got.length) && Date.now() < end) {
    for (let q = 0; q < queues; q++) {
      const page = await mq.pull(topic, q, {
        offset: offsets[q],
        max: 1000,
        waitMs: q === 0 ? 200 : 0,
      });
      got.push(...page.messages);
      offsets[q] = page.nextOffset;
    }
  }
  return got;
}

for (const runtime of RUNTIMES) {
  Deno.test(`timers on ${runtime}: never early, cancel, reschedule, by key`, async (t) => {
    await using b = await startBroker(runtime, { env });
    const mq = b.client;
    await mq.upsertTopic("Timed", { readQueueNums: 1, writeQueueNums: 1 });

    await t.step("a delayed message arrives at its time, not before, with its id", async () => {
      const r = await mq.produce("Timed", { body: "soon", delayMs: 400, keys: ["a"] });
      assert.equal(r.queueOffset, -1);
      // Not there before its time (as delay_levels_test.ts: a machine slow enough to answer
      // this pull after deliverAt may find it; its store time is checked below).
      const before = await mq.pull("Timed", 0, { offset: 0 });
      if (before.messages.length > 0) {
        assert.ok(Date.now() >= r.deliverAt!, "there before its time");
      }
      const [m] = await drain(mq, "Timed", 1, (n) => n >= 1);
      assert.equal(m.messageId, r.messageId);
      assert.ok(
        m.storeTimestamp >= r.deliverAt!,
        `delivered ${r.deliverAt! - m.storeTimestamp} ms early`,
      );
      assert.deepEqual(m.keys, ["a"]);
    });

    await t.step("a past delivery time delivers at once", async () => {
      const r = await mq.produce("Timed", { body: "now", deliverAt: Date.now() - 60_000 });
      assert.equal(r.queueOffset, 1);
    });

    await t.step(
      "cancel before it fires: never delivered; then 404; after delivery: 409",
      async () => {
        const r = await mq.produce("Timed", { body: "cancel me", delayMs: 800 });
        assert.deepEqual(await mq.cancelScheduled("Timed", r.messageId), {
          messageId: r.messageId,
          status: "CANCELLED",
        });
        await assert.rejects(
          mq.cancelScheduled("Timed", r.messageId),
          (e: { code?: string }) => e.code === "MESSAGE_NOT_FOUND",
        );
        const fired = await mq.produce("Timed", { body: "too late", delayMs: 50 });
        await sleep(1200);
        const all = (await mq.pull("Timed", 0, { offset: 0, max: 100 })).messages.map((m) =>
          m.body
        );
        assert.ok(!all.includes("cancel me"));
        assert.ok(all.includes("too late"));
        await assert.rejects(
          mq.cancelScheduled("Timed", fired.messageId),
          (e: { code?: string }) => e.code === "ALREADY_DELIVERED",
        );
      },
    );

    await t.step("reschedule moves the delivery time", async () => {
      const r = await mq.produce("Timed", { body: "moved", delayMs: 60_000 });
      const at = Date.now() + 300;
      const out = await mq.rescheduleScheduled("Timed", r.messageId, at);
      assert.equal(out.status, "RESCHEDULED");
      const got = await drain(mq, "Timed", 1, (n) => n >= 5, 5000);
      const moved = got.find((m) => m.body === "moved");
      assert.ok(moved, "rescheduled message never arrived");
      assert.equal(moved.messageId, r.messageId);
      assert.ok(moved.storeTimestamp >= at);
    });

    await t.step("stats show pending timers and delivery lateness", async () => {
      await mq.produce("Timed", { body: "pending", delayMs: 120_000 });
      const health = await mq.health();
      assert.ok(health.scheduled!.timersPending >= 1);
      assert.ok(health.scheduled!.timersDelivered >= 3);
      assert.ok(health.scheduled!.timerLateP99Ms >= 0 && health.scheduled!.timerLateP99Ms < 1000);
      const metrics = await (await fetch(`${b.url}/metrics`)).text();
      assert.match(metrics, /^mq_timers_pending [1-9]\d*$/m);
      assert.match(metrics, /^mq_delay_level_pending\{level="18"\} 0$/m);
    });

    await t.step("cancel by key cancels every pending message with the key", async () => {
      const ids = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          (await mq.produce("Timed", { body: `k${i}`, delayMs: 30_000, keys: ["batch-7"] }))
            .messageId,
        );
      }
      const out = await mq.cancelScheduledByKey("Timed", "batch-7");
      assert.deepEqual(out.map((o) => o.messageId).sort(), ids.sort());
    });
  });

  Deno.test(`timers on ${runtime}: 2,000 pending timers survive a SIGKILL, none early`, async () => {
    const dataDir = tempDir(`timers-${runtime}`);
    try {
      const sent = new Map<string, number>();
      {
        await using b = await startBroker(runtime, { dataDir, env });
        await b.client.upsertTopic("Many", { readQueueNums: 4, writeQueueNums: 4 });
        const batch: { body: string; deliverAt: number }[] = [];
        const now = Date.now();
        for (let i = 0; i < 2000; i++) {
          batch.push({ body: `t${i}`, deliverAt: now + 500 + Math.floor(Math.random() * 2500) });
        }
        for (let i = 0; i < batch.length; i += 500) {
          const results = await b.client.produceBatch("Many", batch.slice(i, i + 500));
          results.forEach((r, k) => {
            assert.ok(r.ok);
            if (r.ok) sent.set(r.messageId, batch[i + k].deliverAt);
          });
        }
        await sleep(700); // some have fired, most are pending
        await b.kill();
      }
      {
        await using b = await startBroker(runtime, { dataDir, env });
        const got = await drain(b.client, "Many", 4, () => false, 6000);
        const seen = new Set(got.map((m) => m.messageId));
        for (const [id] of sent) assert.ok(seen.has(id), `timer ${id} never fired`);
        for (const m of got) {
          assert.ok(m.storeTimestamp >= sent.get(m.messageId)!, `${m.messageId} fired early`);
        }
        assert.ok(got.length - seen.size < 2000, "duplicates are bounded by the last checkpoint");
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
