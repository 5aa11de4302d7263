// Cron schedules in a real broker process (Deno and Bun): every-second ticks publish the
// stored message; pause stops them; a restart with missedTicks=fire_once publishes one
// catch-up for the ticks missed while down; delete removes the schedule.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const runtime of RUNTIMES) {
  Deno.test(`cron schedules on ${runtime}: tick, pause, missed ticks, delete`, async () => {
    const dataDir = tempDir(`cron-${runtime}`);
    try {
      let id: string;
      {
        await using b = await startBroker(runtime, { dataDir });
        const mq = b.client;
        await mq.upsertTopic("Ticks", { readQueueNums: 1, writeQueueNums: 1 });
        const view = await mq.createSchedule({
          topic: "Ticks",
          cron: "* * * * * *",
          timeZone: "Europe/Berlin",
          missedTicks: "fire_once",
          message: { body: "tick", tag: "cron" },
        });
        id = view.id;
        assert.equal(view.paused, false);
        assert.ok(view.nextTickAt! > Date.now() - 1000);
        const got = await waitFor(async () => {
          const page = await mq.pull("Ticks", 0, { offset: 0, max: 100, waitMs: 1500 });
          return page.messages.length >= 2 ? page : undefined;
        });
        assert.ok(
          got.messages.every((m) =>
            m.body === "tick" && m.tag === "cron" && m.properties.cronSchedule === id
          ),
        );
        const ticks = got.messages.map((m) => Number(m.properties.cronTick));
        assert.ok(ticks.every((t, i) => i === 0 || t > ticks[i - 1]), "ticks rise");
        assert.ok(ticks.every((t) => t % 1000 === 0), "every-second ticks fall on whole seconds");

        await mq.setSchedulePaused(id, true);
        await sleep(200);
        const before = (await mq.pull("Ticks", 0, { offset: 0, max: 1 })).maxOffset;
        await sleep(2200);
        assert.equal(
          (await mq.pull("Ticks", 0, { offset: 0, max: 1 })).maxOffset,
          before,
          "a paused schedule publishes nothing",
        );
        await mq.setSchedulePaused(id, false);
        await b.stop();
      }
      const stoppedAt = Date.now();
      await sleep(2500); // two or three ticks fall while the broker is down
      const restartAt = Date.now();
      {
        await using b = await startBroker(runtime, { dataDir });
        const mq = b.client;
        const page = await mq.pull("Ticks", 0, { offset: 0, max: 1000 });
        // The catch-up is stored by this process (after restartAt) for a tick that fell
        // before it: its tick follows the last one fired before the stop, and the stop may
        // have taken a while under load (so the tick can precede stoppedAt).
        const missed = page.messages.filter((m) => {
          const tick = Number(m.properties.cronTick);
          return m.storeTimestamp >= restartAt && tick < restartAt;
        });
        assert.ok(
          page.messages.every((m) =>
            m.storeTimestamp >= restartAt || m.storeTimestamp <= stoppedAt
          ),
          "nothing is stored while the broker is down",
        );
        assert.equal(missed.length, 1, "fire_once publishes one message for all missed ticks");
        const schedules = await mq.listSchedules();
        assert.deepEqual(schedules.map((s) => s.id), [id]);
        await mq.deleteSchedule(id);
        await assert.rejects(
          mq.getSchedule(id),
          (e: { code?: string }) => e.code === "SCHEDULE_NOT_FOUND",
        );
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`cron schedule export and import on ${runtime} (a drain's move, over HTTP)`, async () => {
    await using b = await startBroker(runtime);
    const mq = b.client;
    await mq.upsertTopic("Moved", { readQueueNums: 1, writeQueueNums: 1 });
    await mq.upsertTopic("Elsewhere", { readQueueNums: 1, writeQueueNums: 1 });
    const view = await mq.createSchedule({
      topic: "Moved",
      cron: "0 0 1 1 *",
      message: { body: "caf\u00e9", tag: "nightly", properties: { k: "v" } },
    });
    const url = `${b.url}/v1/schedules/${view.id}`;
    const whole = await (await fetch(`${url}/export`)).json();
    assert.equal(whole.id, view.id);
    assert.equal(whole.message.bodyEncoding, "base64");
    assert.equal(
      new TextDecoder().decode(Uint8Array.from(atob(whole.message.body), (c) => c.charCodeAt(0))),
      "caf\u00e9",
    );
    const put = (id: string, body: unknown) =>
      fetch(`${b.url}/v1/schedules/${id}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    // Another id in the path than in the body, or one taken by another schedule: refused.
    const mismatch = await put("other-id", whole);
    assert.equal(mismatch.status, 400);
    await mismatch.body?.cancel();
    const taken = await put(view.id, { ...whole, topic: "Elsewhere" });
    assert.equal(taken.status, 409);
    assert.equal((await taken.json()).type, "/problems/schedule-exists");
    // Deleted, then imported: the same id, creation time, message and tick.
    await mq.deleteSchedule(view.id);
    const back = await put(view.id, whole);
    assert.equal(back.status, 200);
    assert.deepEqual(await back.json(), await mq.getSchedule(view.id));
    assert.deepEqual(await (await fetch(`${url}/export`)).json(), whole);
  });
}

async function waitFor<T>(f: () => Promise<T | undefined>, deadlineMs = 10_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    const v = await f();
    if (v !== undefined) return v;
  }
  throw new Error("condition not met in time");
}
