// The SDK's consumer loop (MqClient.subscribe) against real brokers on Deno and Bun: 1,000
// messages through 8 handlers at most, each acked once and none delivered again; a handler
// that throws gets its message again (nack with backoff); stop() waits for a running
// handler and settles its message.
import assert from "node:assert/strict";
import { MqClient, type PopMessage, type ReceiveClient } from "../client/mod.ts";
import { subscribe } from "../client/consumer.ts";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

const COUNT = 1000;
const CONCURRENCY = 8;
const INVISIBLE_MS = 3000;

/** The client, counting acks and nacks by receipt handle. */
function counting(mq: MqClient) {
  const acks = new Map<string, number>();
  const nacks: string[] = [];
  const client: ReceiveClient = {
    receive: (g, o, s) => mq.receive(g, o, s),
    ack: async (g, h) => {
      await mq.ack(g, h);
      acks.set(h, (acks.get(h) ?? 0) + 1);
    },
    nack: async (g, h, d) => {
      await mq.nack(g, h, d);
      nacks.push(h);
    },
  };
  return { client, acks, nacks };
}

for (const runtime of RUNTIMES) {
  Deno.test(`[${runtime}] subscribe: 1,000 messages, concurrency 8, each acked once; a throwing handler gets its message again; stop() is graceful`, async () => {
    await using broker = await startBroker(runtime);
    const mq = new MqClient({ baseUrl: broker.url });
    await mq.upsertGroup("loop", { consumeFromWhere: "FIRST_OFFSET" });
    const batch = Array.from({ length: COUNT }, (_, i) => ({ body: `m${i}` }));
    const produced = await mq.produceBatch("loop-topic", batch);
    assert.equal(produced.filter((r) => r.ok).length, COUNT);

    // 1. 1,000 messages, at most 8 handlers at once, each acked once.
    const { client, acks, nacks } = counting(mq);
    const seen = new Map<string, number>();
    let running = 0;
    let peak = 0;
    const errors: unknown[] = [];
    let allSeen!: () => void;
    const finished = new Promise<void>((resolve) => allSeen = resolve);
    const sub = subscribe(client, "loop-topic", "loop", async (m: PopMessage) => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setTimeout(r, Math.random() * 3));
      running--;
      seen.set(m.body, (seen.get(m.body) ?? 0) + 1);
      if (seen.size === COUNT) allSeen();
    }, {
      concurrency: CONCURRENCY,
      invisibleMs: INVISIBLE_MS,
      waitMs: 500,
      onError: (e) => errors.push(e),
    });
    await finished;
    await sub.stop();
    assert.deepEqual(errors, []);
    assert.equal(seen.size, COUNT);
    assert.ok([...seen.values()].every((n) => n === 1), "each message handled once");
    assert.equal(acks.size, COUNT);
    assert.ok([...acks.values()].every((n) => n === 1), "each receipt acked once");
    assert.deepEqual(nacks, []);
    assert.ok(peak <= CONCURRENCY, `peak ${peak} handlers`);
    assert.ok(peak > 1, `handlers ran concurrently (peak ${peak})`);
    // Acked for good: nothing comes back once the invisible time has passed.
    const again = await mq.receive("loop", {
      topic: "loop-topic",
      max: 32,
      waitMs: INVISIBLE_MS + 500,
    });
    assert.deepEqual(again.map((m) => m.body), []);

    // 2. A handler that throws gets the message again, then acks it.
    await mq.upsertGroup("flaky", { consumeFromWhere: "FIRST_OFFSET" });
    await mq.produce("flaky-topic", { body: "try me" });
    const attempts: number[] = [];
    let settled!: () => void;
    const acked = new Promise<void>((resolve) => settled = resolve);
    const flaky = counting(mq);
    const failed: unknown[] = [];
    const sub2 = subscribe(flaky.client, "flaky-topic", "flaky", (m) => {
      attempts.push(m.reconsumeTimes);
      if (attempts.length === 1) throw new Error("first attempt fails");
      settled();
    }, { concurrency: 2, waitMs: 500, retryDelayMs: () => 200, onError: (e) => failed.push(e) });
    await acked;
    await sub2.stop();
    assert.deepEqual(attempts, [0, 1]);
    assert.equal(flaky.nacks.length, 1);
    assert.equal(flaky.acks.size, 1);
    assert.equal((failed[0] as Error).message, "first attempt fails");

    // 3. stop() waits for a running handler and acks its message.
    await mq.produce("flaky-topic", { body: "slow" });
    let started!: () => void;
    const inHandler = new Promise<void>((resolve) => started = resolve);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => release = resolve);
    const slow = counting(mq);
    const sub3 = subscribe(slow.client, "flaky-topic", "flaky", async () => {
      started();
      await gate;
    }, { waitMs: 500 });
    await inHandler;
    let stopped = false;
    const stopping = sub3.stop().then(() => stopped = true);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(stopped, false, "stop() waits for the running handler");
    release();
    await stopping;
    assert.equal(slow.acks.size, 1);
  });
}
