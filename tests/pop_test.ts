// POP consumption in a real broker process (Deno and Bun): receive hides a message until
// it is settled or its invisible time passes; an unacked message comes back with
// reconsumeTimes + 1 (and only after its invisible time); past retryMaxTimes it goes to the
// DLQ; nack and visibility move the deadline; bad handles are typed errors; and a message
// received but not acked before a SIGKILL comes back after the restart.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";
import { seededRandom } from "../storage/testing.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const code = (c: string) => (e: { code?: string }) => e.code === c;
/** The invisible time the steps below use: a received message's handle must still be valid
 * (or the message still hidden) one or two HTTP round trips later, which on a loaded 2-core
 * machine can take a few hundred ms. */
const INVISIBLE_MS = 1000;

for (const runtime of RUNTIMES) {
  Deno.test(`POP on ${runtime}: receive, ack, return after invisible time, nack, visibility, DLQ`, async (t) => {
    await using b = await startBroker(runtime, { env: { MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH" } });
    const mq = b.client;
    await mq.upsertTopic("Jobs", { readQueueNums: 2, writeQueueNums: 2 });
    await mq.upsertGroup("workers");

    await t.step(
      "a received message is invisible to others; an acked one never comes back",
      async () => {
        await mq.produce("Jobs", { body: "job-1", queueId: 0 });
        const [m] = await mq.receive("workers", { topic: "Jobs", invisibleMs: INVISIBLE_MS });
        assert.equal(m.body, "job-1");
        assert.equal(m.reconsumeTimes, 0);
        assert.deepEqual(
          await mq.receive("workers", { topic: "Jobs", invisibleMs: INVISIBLE_MS }),
          [],
        );
        await mq.ack("workers", m.receiptHandle);
        await sleep(INVISIBLE_MS + 200);
        assert.deepEqual(
          await mq.receive("workers", { topic: "Jobs" }),
          [],
          "acked message came back",
        );
        await assert.rejects(mq.ack("workers", m.receiptHandle), code("RECEIPT_HANDLE_SETTLED"));
      },
    );

    await t.step(
      "an unacked message comes back after its invisible time, and only then",
      async () => {
        await mq.produce("Jobs", { body: "job-2", queueId: 1 });
        const received = Date.now();
        const [m] = await mq.receive("workers", { topic: "Jobs", invisibleMs: INVISIBLE_MS });
        assert.deepEqual(await mq.receive("workers", { topic: "Jobs", waitMs: 200 }), []);
        const [again] = await mq.receive("workers", { topic: "Jobs", waitMs: 3000 });
        assert.ok(Date.now() - received >= INVISIBLE_MS, "came back early");
        assert.equal(again.body, "job-2");
        assert.equal(again.messageId, m.messageId);
        assert.equal(again.topic, "Jobs");
        assert.equal(again.reconsumeTimes, 1);
        await assert.rejects(mq.ack("workers", m.receiptHandle), code("RECEIPT_HANDLE_EXPIRED"));
        await mq.ack("workers", again.receiptHandle);
      },
    );

    await t.step("nack returns it at once; visibility extends the deadline", async () => {
      await mq.produce("Jobs", { body: "job-3", queueId: 0 });
      const [m] = await mq.receive("workers", { topic: "Jobs", invisibleMs: 60_000 });
      await mq.nack("workers", m.receiptHandle);
      const [back] = await mq.receive("workers", {
        topic: "Jobs",
        waitMs: 3000,
        invisibleMs: INVISIBLE_MS,
      });
      assert.equal(back.body, "job-3");
      assert.equal(back.reconsumeTimes, 1);
      const extended = 3 * INVISIBLE_MS;
      const { invisibleUntil } = await mq.changeInvisibleTime(
        "workers",
        back.receiptHandle,
        extended,
      );
      assert.ok(invisibleUntil >= Date.now() + extended - 500);
      // Past the first invisible time: still invisible thanks to the extension.
      await sleep(INVISIBLE_MS + 200);
      assert.deepEqual(await mq.receive("workers", { topic: "Jobs" }), []);
      await mq.ack("workers", back.receiptHandle);
    });

    await t.step(
      "past retryMaxTimes a message goes to the DLQ; redrive puts it back; purge empties",
      async () => {
        await mq.upsertTopic("Fragile", { readQueueNums: 1, writeQueueNums: 1 });
        const settings = await mq.upsertGroup("strict", { retryMaxTimes: 1 });
        assert.equal(settings.retryMaxTimes, 1);
        const { messageId } = await mq.produce("Fragile", {
          body: "poison",
          properties: { k: "v" },
        });
        const seen: number[] = [];
        const end = Date.now() + 8000;
        while (seen.length < 2 && Date.now() < end) {
          for (
            const m of await mq.receive("strict", {
              topic: "Fragile",
              invisibleMs: 150,
              waitMs: 1000,
            })
          ) {
            assert.equal(m.messageId, messageId);
            seen.push(m.reconsumeTimes); // never acked: it fails every time
          }
        }
        assert.deepEqual(seen, [0, 1]);
        let dlq = await mq.listDlq("strict");
        for (let i = 0; i < 30 && dlq.messages.length === 0; i++) {
          await sleep(100);
          dlq = await mq.listDlq("strict");
        }
        assert.equal(dlq.messages.length, 1, "the message never reached the DLQ");
        assert.equal(dlq.messages[0].messageId, messageId);
        assert.equal(dlq.messages[0].topic, "Fragile");
        assert.equal(dlq.messages[0].reconsumeTimes, 2);
        assert.deepEqual(
          await mq.receive("strict", { topic: "Fragile", waitMs: 300 }),
          [],
          "a dead letter is not delivered",
        );
        assert.deepEqual(await mq.redriveDlq("strict"), { redriven: 1 });
        const [back] = await mq.receive("strict", { topic: "Fragile", waitMs: 2000 });
        assert.equal(back.messageId, messageId);
        assert.equal(back.reconsumeTimes, 0);
        assert.deepEqual(back.properties, { k: "v" });
        await mq.ack("strict", back.receiptHandle);
        assert.equal(
          (await mq.listDlq("strict")).messages.length,
          0,
          "redriven letters leave the list",
        );
        assert.deepEqual(await mq.purgeDlq("strict"), { purged: 0 });
      },
    );

    await t.step("batch ack: each handle succeeds or fails alone", async () => {
      for (let i = 0; i < 3; i++) await mq.produce("Jobs", { body: `batch-${i}`, queueId: 0 });
      const got = await mq.receive("workers", {
        topic: "Jobs",
        max: 10,
        invisibleMs: INVISIBLE_MS,
      });
      assert.equal(got.length, 3);
      const results = await mq.ackBatch("workers", [
        ...got.map((m) => m.receiptHandle),
        "0123456789ABCDEF0123456789ABCDEF",
      ]);
      assert.deepEqual(results.map((r) => r.ok), [true, true, true, false]);
      await sleep(INVISIBLE_MS + 200);
      assert.deepEqual(
        await mq.receive("workers", { topic: "Jobs" }),
        [],
        "batch-acked messages came back",
      );
    });

    await t.step(
      "broadcasting: every client gets every message from offsets of its own",
      async () => {
        await mq.upsertTopic("News", { readQueueNums: 2, writeQueueNums: 2 });
        await mq.upsertGroup("screens", { messageModel: "BROADCASTING" });
        for (let i = 0; i < 4; i++) await mq.produce("News", { body: `n${i}`, queueId: i % 2 });
        const a = await mq.receive("screens", { topic: "News", clientId: "screen-a", max: 10 });
        const b2 = await mq.receive("screens", { topic: "News", clientId: "screen-b", max: 10 });
        assert.deepEqual(a.map((m) => m.body).sort(), ["n0", "n1", "n2", "n3"]);
        assert.deepEqual(b2.map((m) => m.body).sort(), ["n0", "n1", "n2", "n3"]);
        assert.deepEqual(
          await mq.receive("screens", { topic: "News", clientId: "screen-a" }),
          [],
          "a's offsets moved",
        );
        await assert.rejects(mq.receive("screens", { topic: "News" }), code("INVALID_PARAMETER"));
      },
    );

    await t.step("bad input: unknown handle, unknown group, bad invisible time", async () => {
      await assert.rejects(
        mq.ack("workers", "0123456789ABCDEF0123456789ABCDEF"),
        code("RECEIPT_HANDLE_UNKNOWN"),
      );
      await assert.rejects(mq.ack("workers", "not-a-handle"), code("RECEIPT_HANDLE_UNKNOWN"));
      await assert.rejects(mq.receive("nobody", { topic: "Jobs" }), code("GROUP_NOT_FOUND"));
      await assert.rejects(
        mq.receive("workers", { topic: "Jobs", invisibleMs: 0 }),
        code("INVALID_PARAMETER"),
      );
    });
  });

  Deno.test(`ordered POP on ${runtime}: concurrent consumers with failures never see a queue out of order`, async () => {
    await using b = await startBroker(runtime, { env: { MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH" } });
    const mq = b.client;
    await mq.upsertTopic("Seq", { readQueueNums: 2, writeQueueNums: 2 });
    await mq.upsertGroup("ordered", { orderly: true });
    const keys = ["k0", "k1", "k2", "k3"];
    let total = 0;
    for (let i = 0; i < 6; i++) {
      for (const k of keys) {
        await mq.produce("Seq", { body: `${k}:${i}`, shardingKey: k });
        total++;
      }
    }
    const acked = [0, 0]; // per queue: offsets below this were acked (marked before the ack is sent)
    const received: string[] = [];
    let failures = 0;
    const events: string[] = [];
    const random = seededRandom(12345);
    const fail = () => random() < 0.25; // a quarter of deliveries fail (retryMaxTimes 16: none is buried)
    const consumer = async () => {
      const end = Date.now() + 20_000;
      while (acked[0] + acked[1] < total && Date.now() < end) {
        for (
          const m of await mq.receive("ordered", {
            topic: "Seq",
            max: 4,
            invisibleMs: 2000,
            waitMs: 300,
          })
        ) {
          events.push(`recv q${m.queueId}@${m.queueOffset} ${m.receiptHandle.slice(-6)}`);
          assert.equal(
            m.queueOffset,
            acked[m.queueId],
            `queue ${m.queueId}: got offset ${m.queueOffset} before ${
              acked[m.queueId]
            } was acked; ${events.slice(-30).join(" | ")}`,
          );
          received.push(m.body);
          if (fail()) {
            failures++;
            events.push(`nack q${m.queueId}@${m.queueOffset} ${m.receiptHandle.slice(-6)}`);
            await mq.nack("ordered", m.receiptHandle, 0);
          } else {
            acked[m.queueId] = m.queueOffset + 1;
            events.push(`ack q${m.queueId}@${m.queueOffset} ${m.receiptHandle.slice(-6)}`);
            await mq.ack("ordered", m.receiptHandle);
          }
        }
      }
    };
    await Promise.all([consumer(), consumer(), consumer(), consumer()]);
    assert.equal(acked[0] + acked[1], total, "not every message was acked");
    assert.ok(failures > 0, "the run injected no failure");
    // Per key, first receipts follow the produce order.
    for (const k of keys) {
      const firsts = [...new Set(received.filter((b) => b.startsWith(`${k}:`)))];
      assert.deepEqual(firsts, [0, 1, 2, 3, 4, 5].map((i) => `${k}:${i}`));
    }
  });

  Deno.test(`POP on ${runtime}: a received, unacked message survives a SIGKILL`, async () => {
    const dataDir = tempDir(`pop-${runtime}`);
    const env = { MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH" };
    try {
      let id: string;
      {
        await using b = await startBroker(runtime, { dataDir, env });
        await b.client.upsertTopic("Work", { readQueueNums: 1, writeQueueNums: 1 });
        await b.client.upsertGroup("g");
        id = (await b.client.produce("Work", { body: "survive" })).messageId;
        const [m] = await b.client.receive("g", { topic: "Work", invisibleMs: 800 });
        assert.equal(m.messageId, id);
        await b.kill();
      }
      {
        await using b = await startBroker(runtime, { dataDir, env });
        const seen = [];
        const end = Date.now() + 8000;
        while (Date.now() < end && seen.length === 0) {
          seen.push(...await b.client.receive("g", { topic: "Work", waitMs: 1000 }));
        }
        assert.equal(seen[0]?.messageId, id, "the unacked message never came back");
        await b.client.ack("g", seen[0].receiptHandle);
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
