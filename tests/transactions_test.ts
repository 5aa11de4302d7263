// Transactional messages (issue #23) with real broker processes under Deno and Bun: commit
// delivers exactly once, rollback never; an orphan is checked (check URL, signed; long
// poll) and its answer is applied; UNKNOWN transactionCheckMax times discards it, findable;
// kill -9 between begin and commit and between the commit's put and its op record; commits
// keep per-sharding-key order.
import assert from "node:assert/strict";
import { MqClient } from "../client/mod.ts";
import { runTransactionChecks, TransactionClient } from "../client/transactions.ts";
import { verifyWebhook } from "../client/webhooks.ts";
import type { WireMessage } from "../runtime/protocol/types.ts";
import { startBroker, tempDir } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";
import { Receiver } from "./harness/receiver.ts";

const TOPIC = "Orders";
const QUEUES = 4;
const CHECK_MAX = 15;
const ENV = {
  MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
  MQ_TRANSACTION_TIMEOUT_MS: "300",
  MQ_TRANSACTION_CHECK_INTERVAL_MS: "60",
  MQ_TRANSACTION_CHECK_MAX: String(CHECK_MAX),
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readTopic(mq: MqClient, topic = TOPIC): Promise<WireMessage[]> {
  const out: WireMessage[] = [];
  for (let q = 0; q < QUEUES; q++) {
    const got = await mq.pull(topic, q, { offset: 0, max: 1000 });
    out.push(...got.messages);
  }
  return out;
}

async function until<T>(f: () => Promise<T | undefined>, what: string, ms = 10_000) {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`transactions on ${runtime}: commit, rollback, check URL, long poll, give-up, order`, async () => {
    await using receiver = new Receiver();
    await using b = await startBroker(runtime, { env: ENV });
    const mq = b.client;
    const tx = new TransactionClient({ baseUrl: b.url });
    await mq.upsertTopic(TOPIC, { readQueueNums: QUEUES, writeQueueNums: QUEUES });

    // Commit delivers exactly once, with id, keys and properties; rollback never.
    const a = await tx.beginTransaction(TOPIC, {
      body: "order-a",
      keys: ["A1", "A2"],
      tag: "created",
      properties: { region: "eu" },
    }, "app");
    assert.equal(a.queueOffset, -1);
    assert.equal(a.transactionId, a.messageId);
    const r = await tx.beginTransaction(TOPIC, { body: "order-r" }, "app");
    assert.equal((await tx.getTransaction(a.transactionId)).state, "PREPARED");
    assert.equal((await readTopic(mq)).length, 0, "a half message is visible");
    assert.equal((await tx.commit(a.transactionId)).state, "COMMITTED");
    assert.equal((await tx.commit(a.transactionId)).state, "COMMITTED"); // same again: 200
    assert.equal((await tx.rollback(r.transactionId)).state, "ROLLED_BACK");
    await assert.rejects(tx.rollback(a.transactionId), { code: "TRANSACTION_DECIDED" });
    await assert.rejects(tx.commit(r.transactionId), { code: "TRANSACTION_DECIDED" });
    const raw = await fetch(`${b.url}/v1/transactions/${r.transactionId}/commit`, {
      method: "POST",
    });
    assert.equal(raw.status, 409);
    await raw.body?.cancel();
    let all = await readTopic(mq);
    assert.equal(all.length, 1);
    assert.equal(all[0].messageId, a.messageId);
    assert.equal(all[0].body, "order-a");
    assert.deepEqual(all[0].keys, ["A1", "A2"]);
    assert.equal(all[0].tag, "created");
    assert.equal(all[0].properties.region, "eu");
    assert.equal(all[0].queueId, a.queueId);
    assert.equal((await mq.findMessages(TOPIC, { key: "A1" })).length, 1);
    await assert.rejects(mq.getMessageById(r.messageId), (err: Error) => {
      assert.match(err.message, /transactional message, ROLLED_BACK/);
      return true;
    });
    const rolled = await tx.getTransaction(r.transactionId);
    assert.equal(rolled.state, "ROLLED_BACK");
    assert.equal(rolled.message?.body, "order-r"); // findable by operators
    await assert.rejects(tx.getTransaction("0".repeat(32)), { code: "TRANSACTION_NOT_FOUND" });
    await assert.rejects(
      tx.beginTransaction(TOPIC, { body: "x", delayMs: 1000 }, "app"),
      { code: "INVALID_PARAMETER" },
    );
    const noGroup = await fetch(`${b.url}/v1/topics/${TOPIC}/messages`, {
      method: "POST",
      headers: { "mq-transaction": "begin" },
      body: "x",
    });
    assert.equal(noGroup.status, 400);
    await noGroup.body?.cancel();
    const batch = await fetch(`${b.url}/v1/topics/${TOPIC}/messages/batch`, {
      method: "POST",
      headers: { "mq-transaction": "begin", "mq-producer-group": "app" },
      body: JSON.stringify({ messages: [{ body: "x" }] }),
    });
    assert.equal(batch.status, 400); // never stored as plain messages
    await batch.body?.cancel();

    // A producer that never decides: its check URL answers COMMIT → delivered once.
    const committer = await tx.setTransactionCheck("committer", {
      url: receiver.on("/commit", () => Response.json({ decision: "COMMIT" })),
    });
    const c = await tx.beginTransaction(TOPIC, { body: "order-c" }, "committer");
    await until(async () => (await readTopic(mq)).find((m) => m.messageId === c.messageId), "c");
    const cView = await until(async () => {
      const v = await tx.getTransaction(c.transactionId);
      return v.state === "COMMITTED" ? v : undefined;
    }, "c committed");
    assert.equal(cView.checks, 1);
    const hit = receiver.at("/commit")[0];
    await verifyWebhook(hit.headers, hit.body, committer.secrets); // signed like a webhook
    const check = JSON.parse(new TextDecoder().decode(hit.body));
    assert.equal(check.transactionId, c.transactionId);
    assert.equal(check.topic, TOPIC);
    assert.equal(check.message.body, "order-c");
    // The check came after transactionTimeoutMs, not before.
    assert.ok(hit.at >= c.storeTimestamp + 300 - 5, `checked ${hit.at - c.storeTimestamp} ms`);

    // UNKNOWN transactionCheckMax times → DISCARDED, nothing delivered, still findable.
    await tx.setTransactionCheck("unsure", {
      url: receiver.on("/unknown", () => Response.json({ decision: "UNKNOWN" })),
    });
    const u = await tx.beginTransaction(TOPIC, { body: "order-u" }, "unsure");
    const uView = await until(
      async () => {
        const v = await tx.getTransaction(u.transactionId);
        return v.state === "DISCARDED" ? v : undefined;
      },
      "u discarded",
      15_000,
    );
    assert.equal(uView.checks, CHECK_MAX);
    assert.equal(receiver.at("/unknown").length, CHECK_MAX);
    assert.equal(uView.message?.body, "order-u");
    await assert.rejects(tx.commit(u.transactionId), { code: "TRANSACTION_DECIDED" });
    await assert.rejects(mq.getMessageById(u.messageId), /transactional message, DISCARDED/);
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    assert.match(metrics, /^mq_transactions_discarded_total 1$/m);
    assert.match(metrics, /^mq_transaction_checks_total (1[6-9]|[2-9]\d)$/m); // 1 + 15 so far

    // Long poll: a producer without an inbound URL answers checks itself.
    const stop = new AbortController();
    const seen: string[] = [];
    const loop = runTransactionChecks(tx, "poller", (ck) => {
      seen.push(ck.transactionId);
      return ck.message.body === "order-p1" ? "COMMIT" : "ROLLBACK";
    }, { signal: stop.signal, waitMs: 2000 });
    const p1 = await tx.beginTransaction(TOPIC, { body: "order-p1" }, "poller");
    const p2 = await tx.beginTransaction(TOPIC, { body: "order-p2" }, "poller");
    await until(async () => {
      const [v1, v2] = await Promise.all([p1, p2].map((p) => tx.getTransaction(p.transactionId)));
      return v1.state === "COMMITTED" && v2.state === "ROLLED_BACK" ? true : undefined;
    }, "p1 committed, p2 rolled back");
    stop.abort();
    await loop;
    assert.deepEqual(new Set(seen), new Set([p1.transactionId, p2.transactionId]));

    // Concurrent transactions: per sharding key, committed messages keep commit order.
    const KEYS = 4, PER_KEY = 12;
    const committed = new Map<string, number[]>();
    await Promise.all(Array.from({ length: KEYS }, async (_, k) => {
      const key = `user-${k}`;
      const begun = await Promise.all(
        Array.from(
          { length: PER_KEY },
          (_, i) => tx.beginTransaction(TOPIC, { body: `${key}:${i}`, shardingKey: key }, "app"),
        ),
      );
      const order: number[] = [];
      for (let i = 0; i < PER_KEY; i++) {
        if (i % 3 === 2) await tx.rollback(begun[i].transactionId);
        else {
          await tx.commit(begun[i].transactionId);
          order.push(i);
        }
      }
      committed.set(key, order);
    }));
    all = await readTopic(mq);
    for (const [key, order] of committed) {
      const got = all.filter((m) => m.shardingKey === key).map((m) => Number(m.body.split(":")[1]));
      assert.deepEqual(got, order, `order of ${key}`);
    }
    // Everything committed arrived exactly once.
    const ids = all.map((m) => m.messageId);
    assert.equal(new Set(ids).size, ids.length, "a message was delivered twice");
    assert.equal(ids.length, 1 + 1 + 1 + KEYS * (PER_KEY - PER_KEY / 3));
  });

  Deno.test(`transactions on ${runtime}: kill -9 between begin and commit, and between the commit's put and its op record`, async () => {
    const dataDir = tempDir(`tx-crash-${runtime}`);
    const env = { ...ENV, MQ_TRANSACTION_TIMEOUT_MS: "60000" };
    let keep: string, drop: string, torn: string;
    {
      await using b = await startBroker(runtime, { dataDir, env });
      const tx = new TransactionClient({ baseUrl: b.url });
      await b.client.upsertTopic(TOPIC, { readQueueNums: QUEUES, writeQueueNums: QUEUES });
      await tx.setTransactionCheck("gone", { url: "http://127.0.0.1:9/gone" });
      await tx.setTransactionCheck("kept", { url: "http://127.0.0.1:9/kept" });
      await tx.deleteTransactionCheck("gone");
      keep = (await tx.beginTransaction(TOPIC, { body: "keep" }, "app")).transactionId;
      drop = (await tx.beginTransaction(TOPIC, { body: "drop" }, "app")).transactionId;
      await b.kill();
    }
    {
      // Restarted: the producer's decisions apply; then the commit of `torn` dies after
      // the real message is stored, before its op record.
      await using b = await startBroker(runtime, {
        dataDir,
        env: { ...env, MQ_TRANSACTION_FAULT: "kill-after-commit-put" },
      });
      const tx = new TransactionClient({ baseUrl: b.url });
      assert.equal((await tx.getTransaction(keep)).state, "PREPARED");
      // Check URLs come back from the log; a deleted one stays deleted.
      assert.equal((await tx.getTransactionCheck("kept")).url, "http://127.0.0.1:9/kept");
      await assert.rejects(tx.getTransactionCheck("gone"), { code: "GROUP_NOT_FOUND" });
      assert.equal((await tx.rollback(drop)).state, "ROLLED_BACK");
      torn = (await tx.beginTransaction(TOPIC, { body: "torn" }, "app")).transactionId;
      await assert.rejects(tx.commit(keep)); // the broker kills itself mid-commit
      await b.child.exited;
    }
    {
      await using b = await startBroker(runtime, { dataDir, env });
      const tx = new TransactionClient({ baseUrl: b.url });
      // `keep` was committed (its message stored) before the crash: the broker completes
      // it from the log; the producer's repeat commit answers the same.
      assert.equal((await tx.getTransaction(keep)).state, "COMMITTED");
      assert.equal((await tx.commit(keep)).state, "COMMITTED");
      assert.equal((await tx.getTransaction(torn)).state, "PREPARED");
      assert.equal((await tx.commit(torn)).state, "COMMITTED");
      const bodies = (await readTopic(b.client)).map((m) => m.body).sort();
      assert.deepEqual(bodies, ["keep", "torn"]);
      await b.stop();
    }
    {
      // A clean restart changes nothing.
      await using b = await startBroker(runtime, { dataDir, env });
      const tx = new TransactionClient({ baseUrl: b.url });
      assert.equal((await tx.getTransaction(drop)).state, "ROLLED_BACK");
      assert.equal((await readTopic(b.client)).length, 2);
    }
    Deno.removeSync(dataDir, { recursive: true });
  });
}
