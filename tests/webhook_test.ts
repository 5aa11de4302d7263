// Webhook push from a real broker process (Deno and Bun) to real HTTP receivers on
// loopback (allowlisted): signed deliveries with stable ids, retries on 500 / timeout /
// redirect, Retry-After honoured, 410 disables, DLQ past the last retry, ordered per key,
// and nothing lost across a SIGKILL mid-delivery.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker, tempDir } from "./harness/broker.ts";
import { Receiver } from "./harness/receiver.ts";
import type { Received } from "./harness/receiver.ts";
import { rmSync } from "node:fs";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const code = (c: string) => (e: { code?: string }) => e.code === c;
const text = (r: Received) => new TextDecoder().decode(r.body);
const ENV = { MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1", MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH" };

/** Standard Webhooks check, written out here so the test does not trust the broker's code. */
function verified(r: Received, secret: string): boolean {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const id = r.headers["webhook-id"];
  const ts = r.headers["webhook-timestamp"];
  const mac = createHmac("sha256", key).update(`${id}.${ts}.`).update(r.body).digest("base64");
  return r.headers["webhook-signature"].split(" ").includes(`v1,${mac}`);
}

for (const runtime of RUNTIMES) {
  Deno.test(`webhooks on ${runtime}: signed delivery, retries, Retry-After, 410, redirects, DLQ`, async (t) => {
    await using rx = new Receiver();
    await using b = await startBroker(runtime, { env: ENV });
    const mq = b.client;
    await mq.upsertTopic("Orders", { readQueueNums: 2, writeQueueNums: 2 });

    await t.step("every message arrives once, signed, with its id and metadata", async () => {
      const url = rx.on("/ok", () => new Response("thanks"));
      const sub = await mq.upsertSubscription("shop", { topic: "Orders", url });
      assert.equal(sub.status, "active");
      assert.equal(sub.secrets.length, 1);
      assert.match(sub.secrets[0], /^whsec_/);
      const sent = [];
      for (let i = 0; i < 20; i++) {
        sent.push(
          await mq.produce("Orders", {
            body: `order-${i}`,
            tag: i % 2 ? "paid" : "new",
            keys: [`k${i}`],
          }),
        );
      }
      await rx.until(() => rx.at("/ok").length >= 20, 10_000, "20 deliveries");
      await sleep(300);
      const got = rx.at("/ok");
      assert.equal(got.length, 20, "a message was delivered twice");
      for (const r of got) assert.ok(verified(r, sub.secrets[0]), "bad signature");
      const byId = new Map(got.map((r) => [r.headers["webhook-id"], r]));
      for (const [i, s] of sent.entries()) {
        const r = byId.get(s.messageId);
        assert.ok(r, `message ${i} not delivered`);
        assert.equal(text(r), `order-${i}`);
        assert.equal(r.headers["mq-topic"], "Orders");
        assert.equal(r.headers["mq-tag"], i % 2 ? "paid" : "new");
        assert.equal(r.headers["mq-keys"], `k${i}`);
        assert.equal(r.headers["mq-queue-id"], String(s.queueId));
        assert.equal(r.headers["mq-queue-offset"], String(s.queueOffset));
        assert.equal(r.headers["mq-reconsume-times"], "0");
        assert.ok(Math.abs(Number(r.headers["webhook-timestamp"]) - Date.now() / 1000) < 30);
      }
      const log = await mq.listDeliveries("shop", { messageId: sent[3].messageId });
      assert.equal(log.length, 1);
      assert.equal(log[0].status, 200);
      assert.equal(log[0].outcome, "delivered");
      assert.equal(log[0].response, "thanks");
      const view = await mq.getSubscription("shop");
      assert.equal(view.stats.delivered, 20);
      assert.equal(view.stats.lag, 0);
      assert.ok(!view.secrets[0].endsWith("="), "GET shows the whole secret");
      await mq.deleteSubscription("shop");
    });

    await t.step("a tag filter delivers only matching messages", async () => {
      const url = rx.on("/paid", () => new Response(null, { status: 204 }));
      await mq.upsertSubscription("paid-only", { topic: "Orders", url, tags: "paid" });
      await mq.produce("Orders", { body: "x", tag: "new" });
      const { messageId } = await mq.produce("Orders", { body: "y", tag: "paid" });
      await rx.until(() => rx.at("/paid").length >= 1, 10_000, "the paid message");
      await sleep(300);
      assert.deepEqual(rx.at("/paid").map((r) => r.headers["webhook-id"]), [messageId]);
      await mq.deleteSubscription("paid-only");
    });

    await t.step("500s are retried with the same id until success", async () => {
      const url = rx.on(
        "/flaky",
        (_r, hits) => new Response("no", { status: hits < 2 ? 500 : 200 }),
      );
      await mq.upsertSubscription("flaky", { topic: "Orders", url, retryBackoffMs: [200] });
      const { messageId } = await mq.produce("Orders", { body: "retry me" });
      await rx.until(() => rx.at("/flaky").length >= 3, 10_000, "three attempts");
      await sleep(500);
      const got = rx.at("/flaky");
      assert.equal(got.length, 3);
      assert.deepEqual(got.map((r) => r.headers["webhook-id"]), [messageId, messageId, messageId]);
      assert.deepEqual(got.map((r) => r.headers["mq-reconsume-times"]), ["0", "1", "2"]);
      assert.deepEqual(got.map(text), ["retry me", "retry me", "retry me"]);
      assert.ok(got[1].at - got[0].at >= 150, "retried before its backoff");
      const log = await mq.listDeliveries("flaky");
      assert.deepEqual(log.map((a) => a.outcome), ["delivered", "retry", "retry"]);
      await mq.deleteSubscription("flaky");
    });

    await t.step("a hung endpoint times out and is retried", async () => {
      const url = rx.on("/slow", (_r, hits) => hits === 0 ? rx.hang() : new Response("ok"));
      await mq.upsertSubscription("slow", {
        topic: "Orders",
        url,
        timeoutMs: 300,
        retryBackoffMs: [100],
      });
      await mq.produce("Orders", { body: "slow" });
      await rx.until(() => rx.at("/slow").length >= 2, 10_000, "the retry after a timeout");
      const log = await mq.listDeliveries("slow");
      const first = log.at(-1)!;
      assert.equal(first.status, 0);
      assert.match(first.error ?? "", /No complete response within 300 ms/);
      await mq.deleteSubscription("slow");
    });

    await t.step("Retry-After is honoured", async () => {
      const url = rx.on(
        "/busy",
        (_r, hits) =>
          hits === 0
            ? new Response("busy", { status: 429, headers: { "retry-after": "1" } })
            : new Response("ok"),
      );
      await mq.upsertSubscription("busy", { topic: "Orders", url, retryBackoffMs: [50] });
      await mq.produce("Orders", { body: "later" });
      await rx.until(() => rx.at("/busy").length >= 2, 10_000, "the retry after 429");
      const [a, b2] = rx.at("/busy");
      assert.ok(b2.at - a.at >= 950, `retried ${b2.at - a.at} ms after a Retry-After of 1 s`);
      assert.equal((await mq.listDeliveries("busy")).at(-1)!.outcome, "throttled");
      await mq.deleteSubscription("busy");
    });

    await t.step("redirects are not followed; the attempt fails and is retried", async () => {
      const target = rx.on("/target", () => new Response("reached"));
      const url = rx.on(
        "/moved",
        (_r, hits) =>
          hits === 0
            ? new Response(null, { status: 302, headers: { location: target } })
            : new Response("ok"),
      );
      await mq.upsertSubscription("moved", { topic: "Orders", url, retryBackoffMs: [100] });
      await mq.produce("Orders", { body: "stay" });
      await rx.until(() => rx.at("/moved").length >= 2, 10_000, "the retry after a 302");
      assert.equal(rx.at("/target").length, 0, "the redirect was followed");
      await mq.deleteSubscription("moved");
    });

    await t.step("410 disables the subscription; resume delivers again", async () => {
      let gone = true;
      const url = rx.on("/gone", () => new Response(null, { status: gone ? 410 : 200 }));
      await mq.upsertSubscription("gone", { topic: "Orders", url });
      const { messageId } = await mq.produce("Orders", { body: "anyone?" });
      await rx.until(() => rx.at("/gone").length >= 1, 10_000, "the first attempt");
      await sleep(300);
      const view = await mq.getSubscription("gone");
      assert.equal(view.status, "disabled");
      assert.match(view.statusReason ?? "", /410/);
      await mq.produce("Orders", { body: "nobody" });
      await sleep(500);
      assert.equal(rx.at("/gone").length, 1, "delivered while disabled");
      gone = false;
      await mq.setSubscriptionPaused("gone", false);
      await rx.until(() => rx.at("/gone").length >= 3, 10_000, "both after resume");
      const after = rx.at("/gone").slice(1);
      assert.deepEqual(after.map(text).sort(), ["anyone?", "nobody"]);
      assert.ok(after.some((r) => r.headers["webhook-id"] === messageId));
      await mq.deleteSubscription("gone");
    });

    await t.step(
      "past the last retry a message goes to the DLQ, and the callback hears",
      async () => {
        const url = rx.on("/broken", () => new Response("boom", { status: 500 }));
        const callback = rx.on("/callback", () => new Response("noted"));
        await mq.upsertSubscription("broken", {
          topic: "Orders",
          url,
          retryMaxTimes: 2,
          retryBackoffMs: [100, 100],
          failureCallbackUrl: callback,
        });
        const { messageId } = await mq.produce("Orders", { body: "poison" });
        await rx.until(() => rx.at("/callback").length >= 1, 10_000, "the failure callback");
        assert.equal(rx.at("/broken").length, 3);
        const notice = JSON.parse(text(rx.at("/callback")[0]));
        assert.equal(notice.type, "message.dead_lettered");
        assert.equal(notice.messageId, messageId);
        const dlq = await mq.listDlq("broken");
        assert.deepEqual(dlq.messages.map((m) => m.messageId), [messageId]);
        assert.equal(dlq.messages[0].body, "poison");
        assert.equal((await mq.getSubscription("broken")).stats.deadLettered, 1);
        await mq.deleteSubscription("broken");
      },
    );

    await t.step("bad subscriptions are refused with typed errors", async () => {
      const base = { topic: "Orders", url: `${rx.url}/ok` };
      await assert.rejects(
        mq.upsertSubscription("x", { ...base, url: "http://10.0.0.1/hook" }),
        code("WEBHOOK_URL_REFUSED"),
      );
      for (
        const url of [
          "https://169.254.169.254/latest/meta-data",
          "https://[::ffff:a9fe:a9fe]/hook",
          "https://[fd00::1]/hook",
          "https://0xa000001/hook",
          "https://100.64.0.1/hook",
          "https://example.com:6379/hook",
          "ftp://example.com/hook",
        ]
      ) {
        await assert.rejects(
          mq.upsertSubscription("x", { ...base, url }),
          code("WEBHOOK_URL_REFUSED"),
        );
      }
      await assert.rejects(
        mq.upsertSubscription("x", { ...base, url: "not a url" }),
        code("WEBHOOK_URL_REFUSED"),
      );
      await assert.rejects(
        mq.upsertSubscription("x", { ...base, secrets: ["hunter2"] }),
        code("INVALID_PARAMETER"),
      );
      await assert.rejects(
        mq.upsertSubscription("x", { ...base, maxConcurrency: 0 }),
        code("INVALID_PARAMETER"),
      );
      await assert.rejects(
        mq.upsertSubscription("x", { ...base, headers: { "webhook-id": "mine" } }),
        code("INVALID_PARAMETER"),
      );
      await assert.rejects(
        mq.upsertSubscription("x", { ...base, bogus: 1 } as never),
        code("INVALID_PARAMETER"),
      );
      await assert.rejects(mq.getSubscription("nobody"), code("SUBSCRIPTION_NOT_FOUND"));
      await assert.rejects(mq.replaySubscription("nobody", 0), code("SUBSCRIPTION_NOT_FOUND"));
      assert.deepEqual(await mq.listSubscriptions(), []);
    });
  });

  Deno.test(`webhooks on ${runtime}: ordered per key, failures never overtaken`, async () => {
    await using rx = new Receiver();
    await using b = await startBroker(runtime, { env: ENV });
    const mq = b.client;
    await mq.upsertTopic("Ledger", { readQueueNums: 1, writeQueueNums: 1 });
    // Key A's second message fails twice; B and C flow meanwhile, A waits in order.
    const url = rx.on("/ordered", (r, _hits) => {
      const body = text(r);
      const tries = rx.at("/ordered").filter((x) => text(x) === body).length;
      return new Response(null, { status: body === "A-1" && tries <= 2 ? 500 : 200 });
    });
    await mq.upsertSubscription("ledger", {
      topic: "Ledger",
      url,
      ordered: true,
      maxConcurrency: 8,
      retryBackoffMs: [300],
    });
    for (let i = 0; i < 5; i++) {
      for (const key of ["A", "B", "C"]) {
        await mq.produce("Ledger", { body: `${key}-${i}`, shardingKey: key });
      }
    }
    await rx.until(
      () => new Set(rx.at("/ordered").map(text)).size >= 15,
      15_000,
      "every message",
    );
    const got = rx.at("/ordered").map(text);
    for (const key of ["A", "B", "C"]) {
      const seq = got.filter((x) => x.startsWith(key));
      // Each message of a key starts only after the previous one of that key succeeded.
      const firsts = [...new Set(seq)];
      assert.deepEqual(firsts, [0, 1, 2, 3, 4].map((i) => `${key}-${i}`), `${key} out of order`);
      for (let i = 1; i < seq.length; i++) {
        assert.ok(
          Number(seq[i].split("-")[1]) >= Number(seq[i - 1].split("-")[1]),
          `${key}: ${seq[i]} after ${seq[i - 1]}`,
        );
      }
    }
    assert.equal(got.filter((x) => x === "A-1").length, 3);
    // B and C finished while A-1 was still failing.
    const doneB = got.lastIndexOf("B-4");
    const lastA1 = got.lastIndexOf("A-1");
    assert.ok(doneB < lastA1, "key B waited for key A");
  });

  Deno.test(`webhooks on ${runtime}: SIGKILL mid-delivery loses nothing, ids stay`, async () => {
    const dataDir = tempDir(`webhook-kill-${runtime}`);
    try {
      await using rx = new Receiver();
      const url = rx.on("/sink", async () => {
        await sleep(5);
        return new Response("ok");
      });
      const ids = new Set<string>();
      {
        await using b = await startBroker(runtime, { dataDir, env: ENV });
        await b.client.upsertTopic("Events", { readQueueNums: 4, writeQueueNums: 4 });
        await b.client.upsertSubscription("sink", { topic: "Events", url, maxConcurrency: 4 });
        const batch = Array.from({ length: 300 }, (_, i) => ({ body: `event-${i}` }));
        for (const r of await b.client.produceBatch("Events", batch)) {
          assert.ok(r.ok);
          ids.add(r.messageId);
        }
        await rx.until(() => rx.at("/sink").length >= 50, 10_000, "some deliveries");
        await b.kill();
      }
      const before = rx.at("/sink").length;
      assert.ok(before < 300, "everything was delivered before the kill; nothing tested");
      {
        await using b = await startBroker(runtime, { dataDir, env: ENV });
        await rx.until(
          () => new Set(rx.at("/sink").map((r) => r.headers["webhook-id"])).size >= 300,
          20_000,
          "every message after the restart",
        ).catch((e) => {
          const seen = new Set(rx.at("/sink").map((r) => r.headers["webhook-id"])).size;
          throw new Error(
            `${e.message}: ${seen} distinct ids; broker said:\n${
              b.child.lines.slice(-20).join("\n")
            }`,
          );
        });
        const seen = new Set(rx.at("/sink").map((r) => r.headers["webhook-id"]));
        for (const id of ids) assert.ok(seen.has(id), `${id} lost`);
        assert.equal(seen.size, 300, "an unknown webhook-id was delivered");
        const bodies = new Map(rx.at("/sink").map((r) => [r.headers["webhook-id"], text(r)]));
        assert.equal(new Set(bodies.values()).size, 300);
        await b.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
