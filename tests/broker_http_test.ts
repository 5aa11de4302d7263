// The broker as a real process under Deno and under Bun, driven over HTTP.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { messageBody } from "../client/mod.ts";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";

const text = (s: string) => new TextEncoder().encode(s);

for (const runtime of RUNTIMES) {
  Deno.test(`broker on ${runtime}: produce, pull, long poll, tags, sharding, offsets, find`, async (t) => {
    await using broker = await startBroker(runtime);
    const c = broker.client;

    await t.step("produce then pull returns the same bytes and properties", async () => {
      await c.upsertTopic("Orders", { readQueueNums: 4, writeQueueNums: 4 });
      const bytes = new Uint8Array([0, 1, 2, 250, 255, 10, 13]);
      const r = await c.produce("Orders", {
        body: bytes,
        queueId: 2,
        tag: "TagA",
        keys: ["k1", "k2"],
        properties: { region: "eu" },
        contentType: "application/x-bin",
      });
      assert.equal(r.queueId, 2);
      assert.equal(r.queueOffset, 0);
      assert.match(r.messageId, /^[0-9A-F]{32}$/);
      assert.equal(r.durability, "WRITTEN");
      const pulled = await c.pull("Orders", 2, { offset: 0 });
      assert.equal(pulled.status, "FOUND");
      assert.equal(pulled.messages.length, 1);
      const m = pulled.messages[0];
      assert.deepEqual(messageBody(m), bytes);
      assert.equal(m.bodyEncoding, "base64");
      assert.equal(m.tag, "TagA");
      assert.deepEqual(m.keys, ["k1", "k2"]);
      assert.deepEqual(m.properties, { region: "eu" });
      assert.equal(m.contentType, "application/x-bin");
      assert.equal(m.messageId, r.messageId);
      assert.deepEqual([pulled.nextOffset, pulled.minOffset, pulled.maxOffset], [1, 0, 1]);
    });

    await t.step(
      "text holding U+FFFD is pulled as base64 on every runtime; a BOM stays",
      async () => {
        await c.upsertTopic("Text", { readQueueNums: 1, writeQueueNums: 1 });
        const replacement = text("valid UTF-8 \uFFFD, still base64 (README)");
        const bom = text("\uFEFFtext after a byte order mark");
        await c.produce("Text", { body: replacement });
        await c.produce("Text", { body: bom });
        const pulled = await c.pull("Text", 0, { offset: 0 });
        assert.deepEqual(pulled.messages.map((m) => m.bodyEncoding), ["base64", "utf8"]);
        assert.deepEqual(messageBody(pulled.messages[0]), replacement);
        assert.equal(pulled.messages[1].body, "\uFEFFtext after a byte order mark");
        assert.deepEqual(messageBody(pulled.messages[1]), bom);
      },
    );

    await t.step("a held pull wakes as soon as a message arrives", async () => {
      const waiting = c.pull("Orders", 1, { offset: 0, waitMs: 10_000 });
      await new Promise((r) => setTimeout(r, 100));
      const started = performance.now();
      await c.produce("Orders", { body: "wake", queueId: 1 });
      const got = await waiting;
      const wakeMs = performance.now() - started;
      assert.equal(got.status, "FOUND");
      assert.equal(new TextDecoder().decode(messageBody(got.messages[0])), "wake");
      // Far below waitMs (10 s), with room for two round trips on busy cores.
      assert.ok(wakeMs < 5000, `woke after ${wakeMs} ms, not at the produce`);
    });

    await t.step("an empty long poll answers after waitMs with NO_NEW_MESSAGE", async () => {
      const started = performance.now();
      const got = await c.pull("Orders", 3, { offset: 0, waitMs: 300 });
      assert.equal(got.status, "NO_NEW_MESSAGE");
      assert.ok(performance.now() - started >= 290);
    });

    await t.step("tag filters", async () => {
      await c.upsertTopic("Tagged", { readQueueNums: 1, writeQueueNums: 1 });
      for (const tag of ["A", "B", "C", "A", "B"]) await c.produce("Tagged", { body: tag, tag });
      const ab = await c.pull("Tagged", 0, { offset: 0, tags: "A || C" });
      assert.deepEqual(ab.messages.map((m) => m.body), ["A", "C", "A"]);
      assert.equal(ab.nextOffset, 5, "the scan passed the last B");
      const all = await c.pull("Tagged", 0, { offset: 0, tags: "*" });
      assert.equal(all.messages.length, 5);
    });

    await t.step("one sharding key always maps to one queue, in order", async () => {
      await c.upsertTopic("Sharded", { readQueueNums: 8, writeQueueNums: 8 });
      const results = [];
      for (let i = 0; i < 20; i++) {
        results.push(await c.produce("Sharded", { body: `o${i}`, shardingKey: "order-42" }));
      }
      const queues = new Set(results.map((r) => r.queueId));
      assert.equal(queues.size, 1);
      const q = results[0].queueId;
      const got = await c.pull("Sharded", q, { offset: 0, max: 100 });
      assert.deepEqual(got.messages.map((m) => m.body), results.map((_, i) => `o${i}`));
    });

    await t.step("batch produce: per-item results, one bad item fails alone", async () => {
      const results = await c.produceBatch("Tagged", [
        { body: "x1" },
        { body: "x2", tag: "bad||tag" },
        { body: "x3", keys: ["kb"] },
      ]);
      assert.equal(results.length, 3);
      assert.equal(results[0].ok, true);
      assert.equal(results[1].ok, false);
      if (!results[1].ok) assert.equal(results[1].error.type, "/problems/invalid-header");
      assert.equal(results[2].ok, true);
    });

    await t.step("consumer offsets: commit, query, lag, reset by time", async () => {
      await c.upsertGroup("g1");
      const committed = await c.commitOffset(
        "g1",
        "Sharded",
        results0(await c.getOffsets("g1", "Sharded")),
        5,
      );
      assert.equal(committed.offset, 5);
      const all = await c.getOffsets("g1", "Sharded");
      const q = all.queues.find((x) => x.offset === 5)!;
      assert.equal(q.lag, 15);
      const reset = await c.resetOffsetsByTime("g1", "Sharded", 0);
      assert.ok(reset.queues.every((x) => x.offset === 0));
    });

    await t.step("find by id and by key", async () => {
      const r = await c.produce("Orders", { body: "findme", keys: ["order-7"] });
      const byId = await c.getMessageById(r.messageId);
      assert.equal(byId.body, "findme");
      const byKey = await c.findMessages("Orders", { key: "order-7" });
      assert.deepEqual(byKey.map((m) => m.messageId), [r.messageId]);
    });

    await t.step("Idempotency-Key repeats return the first result and store nothing", async () => {
      const first = await c.produce("Orders", {
        body: "once",
        queueId: 0,
        idempotencyKey: "idem-1",
      });
      const again = await c.produce("Orders", {
        body: "once",
        queueId: 0,
        idempotencyKey: "idem-1",
      });
      assert.deepEqual({ ...again, idempotentReplay: undefined }, {
        ...first,
        idempotentReplay: undefined,
      });
      assert.equal(again.idempotentReplay, true);
      const got = await c.pull("Orders", 0, { offset: 0, max: 100 });
      assert.equal(got.messages.filter((m) => m.body === "once").length, 1);
    });
  });

  Deno.test(`broker on ${runtime}: messages and offsets survive a restart and a SIGKILL (SYNC_FLUSH)`, async () => {
    const dataDir = tempDir(`restart-${runtime}`);
    // MQ_CQ_FS_SYNC_MIN_QUEUES 1: on Bun each stop syncs the ConsumeQueues with one syncfs
    // (runtime/platform/bun_fs_sync.ts); other Bun tests keep the per-file path.
    const env = {
      MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
      MQ_OFFSET_PERSIST_MS: "100",
      MQ_CQ_FS_SYNC_MIN_QUEUES: "1",
    };
    try {
      {
        await using b = await startBroker(runtime, { dataDir, env });
        await b.client.upsertTopic("Durable", { readQueueNums: 2, writeQueueNums: 2 });
        await b.client.upsertGroup("g");
        for (let i = 0; i < 10; i++) {
          const r = await b.client.produce("Durable", { body: `m${i}`, queueId: i % 2 });
          assert.equal(r.durability, "FLUSHED");
        }
        await b.client.commitOffset("g", "Durable", 0, 3);
        await b.stop();
      }
      {
        await using b = await startBroker(runtime, { dataDir, env });
        assert.equal((await b.client.getOffset("g", "Durable", 0)).offset, 3);
        const got = await b.client.pull("Durable", 0, { offset: 0, max: 10 });
        assert.deepEqual(got.messages.map((m) => m.body), ["m0", "m2", "m4", "m6", "m8"]);
        for (let i = 10; i < 20; i++) {
          await b.client.produce("Durable", { body: `m${i}`, queueId: i % 2 });
        }
        await b.client.commitOffset("g", "Durable", 1, 7);
        // Offsets are persisted every MQ_OFFSET_PERSIST_MS (100): wait for one persist, then
        // kill. Ten intervals, not four: on busy cores the broker's timer and its SQLite
        // write can run hundreds of ms late, and nothing outside shows when it has run.
        await new Promise((r) => setTimeout(r, 1000));
        await b.kill();
      }
      {
        await using b = await startBroker(runtime, { dataDir, env });
        const got = await b.client.pull("Durable", 1, { offset: 0, max: 100 });
        assert.deepEqual(
          got.messages.map((m) => m.body),
          [1, 3, 5, 7, 9, 11, 13, 15, 17, 19].map((i) => `m${i}`),
        );
        assert.equal((await b.client.getOffset("g", "Durable", 1)).offset, 7);
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

function results0(offsets: { queues: { queueId: number; maxOffset: number }[] }): number {
  return offsets.queues.find((q) => q.maxOffset === 20)!.queueId;
}

export { text };
