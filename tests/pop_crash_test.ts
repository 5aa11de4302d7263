// POP across a kill -9 in the middle of an ack storm (real broker processes, Deno and Bun):
// every message whose ack was answered OK never comes back after the restart, and every
// message received and deliberately not acked comes back once its invisible time passed.
// Acks still in flight at the kill may go either way and are not counted.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";
import { seededRandom } from "../storage/testing.ts";

const MESSAGES = 600;
const INVISIBLE_MS = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const runtime of RUNTIMES) {
  Deno.test(`POP on ${runtime}: kill -9 during an ack storm; acked never return, unacked all do`, async () => {
    const dataDir = tempDir(`pop-crash-${runtime}`);
    const acked = new Set<string>();
    const unacked = new Set<string>();
    const random = seededRandom(2727);
    try {
      {
        await using b = await startBroker(runtime, { dataDir });
        const mq = b.client;
        await mq.upsertTopic("Storm", { readQueueNums: 4, writeQueueNums: 4 });
        await mq.upsertGroup("g");
        for (let i = 0; i < MESSAGES; i += 100) {
          await mq.produceBatch(
            "Storm",
            Array.from({ length: 100 }, (_, j) => ({ body: `m${i + j}` })),
          );
        }
        let killed = false;
        const consumer = async () => {
          while (!killed) {
            const got = await mq.receive("g", {
              topic: "Storm",
              max: 16,
              invisibleMs: INVISIBLE_MS,
            })
              .catch(() => []);
            for (const m of got) {
              // One skipped stays skipped: a storm longer than INVISIBLE_MS (a busy
              // machine) receives it again, and acking it then would make it "lost".
              if (unacked.has(m.messageId) || random() < 0.3) {
                unacked.add(m.messageId);
                continue;
              }
              // Not awaited: many acks are in flight when the broker is killed.
              mq.ack("g", m.receiptHandle).then(() => {
                if (!killed) acked.add(m.messageId);
              }, () => {});
            }
          }
        };
        const consumers = [consumer(), consumer(), consumer(), consumer()];
        for (const end = performance.now() + 10_000; acked.size < MESSAGES / 3;) {
          if (performance.now() > end) break;
          await sleep(5);
        }
        killed = true;
        await b.kill();
        await Promise.all(consumers);
      }
      assert.ok(acked.size > 0 && unacked.size > 0, "the storm acked or skipped nothing");
      {
        await using b = await startBroker(runtime, { dataDir });
        const seen = new Set<string>();
        const start = Date.now();
        for (;;) {
          const got = await b.client.receive("g", {
            topic: "Storm",
            max: 32,
            invisibleMs: 60_000,
            waitMs: 300,
          });
          for (const m of got) seen.add(m.messageId);
          if (got.length > 0) {
            await b.client.ackBatch("g", got.map((m) => m.receiptHandle));
            continue;
          }
          const waited = Date.now() - start;
          if (waited > INVISIBLE_MS + 1500 && [...unacked].every((id) => seen.has(id))) break;
          if (waited > 20_000) break;
        }
        const back = [...acked].filter((id) => seen.has(id));
        assert.deepEqual(back, [], `${back.length} of ${acked.size} acked messages came back`);
        const lost = [...unacked].filter((id) => !seen.has(id));
        assert.deepEqual(lost, [], `${lost.length} of ${unacked.size} unacked never came back`);
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
