// The real @upstash/qstash 2.12.0 Client and Receiver against a real broker process (Deno
// and Bun) serving /v2: signed deliveries Receiver.verify accepts, delay and Not-Before,
// retries then DLQ and DLQ retry, a FIFO queue, schedules, dedup, callbacks, batch,
// cancel, key rotation, and bad input refused with nothing stored.
import assert from "node:assert/strict";
import { Client, Receiver } from "@upstash/qstash";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";
import { type Received, Receiver as Rx } from "./harness/receiver.ts";

const TOKEN = "qstash-test-token-0123456789";
const OTHER = "qstash-other-token-0123456789";
const ENV = {
  MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  MQ_API_KEYS: JSON.stringify([
    { key: TOKEN, name: "app", admin: true },
    { key: OTHER, name: "other", publish: ["orders-*"] },
  ]),
  MQ_QSTASH_RETRY_BACKOFF_MS: "50",
  MQ_MAX_MESSAGE_SIZE: "65536",
};
const text = (r: Received) => new TextDecoder().decode(r.body);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function verify(receiver: Receiver, r: Received, url: string) {
  return await receiver.verify({ signature: r.headers["upstash-signature"], body: text(r), url });
}

async function refused(p: Promise<unknown>, status: number, mention: RegExp) {
  const err = await p.then(() => undefined, (e) => e as { status?: number; message: string });
  assert.ok(err, "accepted bad input");
  assert.equal(err.status, status, err.message);
  assert.match(err.message, mention);
}

for (const runtime of RUNTIMES) {
  // The client leaves the (empty) bodies of answers it does not parse unread: not ours.
  Deno.test({
    name: `QStash API on ${runtime} with the real @upstash/qstash client`,
    sanitizeResources: false,
  }, async (t) => {
    await using rx = new Rx();
    await using b = await startBroker(runtime, { env: ENV, token: TOKEN });
    const q = new Client({ baseUrl: b.url, token: TOKEN, retry: false, enableTelemetry: false });
    const keys = await (await fetch(`${b.url}/v2/keys`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).json() as { current: string; next: string };
    assert.match(keys.current, /^sig_/);
    const receiver = new Receiver({
      currentSigningKey: keys.current,
      nextSigningKey: keys.next,
    });

    await t.step("a wrong token is refused; a key's rights hold", async () => {
      const bad = new Client({ baseUrl: b.url, token: "wrong-token-0123456789", retry: false });
      await refused(bad.publish({ url: rx.on("/x", () => new Response()), body: "x" }), 401, /key/);
      const other = new Client({ baseUrl: b.url, token: OTHER, retry: false });
      const url = rx.on("/x", () => new Response());
      await refused(other.publish({ url, body: "x" }), 403, /publish/);
      await refused(other.queue({ queueName: "q1" }).enqueue({ url, body: "x" }), 403, /publish/);
      await refused(other.schedules.list(), 403, /admin/);
      const made = (await b.client.listTopics()).filter((x) => x.name.startsWith("qstash"));
      assert.equal(made.length, 0, "a refused publish made a topic");
    });

    await t.step("publish: delivered once, signed, headers forwarded", async () => {
      const url = rx.on("/hello", () => new Response("hi"));
      const res = await q.publishJSON({
        url,
        body: { hello: "world" },
        headers: { "x-app": "demo" },
      });
      assert.ok(res.messageId);
      await rx.until(() => rx.at("/hello").length >= 1, 10_000, "delivery");
      const r = rx.at("/hello")[0];
      assert.deepEqual(JSON.parse(text(r)), { hello: "world" });
      assert.equal(r.headers["x-app"], "demo");
      assert.equal(r.headers["content-type"], "application/json");
      assert.equal(r.headers["upstash-message-id"], res.messageId);
      assert.equal(r.headers["upstash-retried"], "0");
      assert.equal(r.method, "POST");
      const put = rx.on("/put", () => new Response());
      await q.publish({ url: put, body: "p", method: "PUT" });
      await rx.until(() => rx.at("/put").length >= 1, 10_000, "a PUT delivery");
      assert.equal(rx.at("/put")[0].method, "PUT");
      assert.equal(await verify(receiver, rx.at("/put")[0], put), true);
      assert.equal(await verify(receiver, r, url), true);
      const stored = await q.messages.get(res.messageId);
      assert.equal(stored.url, url);
      assert.equal(stored.body, '{"hello":"world"}');
      await assert.rejects(
        receiver.verify({ signature: r.headers["upstash-signature"], body: "tampered", url }),
      );
    });

    await t.step("delay and not-before are honoured, not early", async () => {
      const url = rx.on("/later", () => new Response());
      const sent = Date.now();
      await q.publish({ url, body: "d", delay: 2 });
      const nb = Math.ceil(Date.now() / 1000) + 2;
      await q.publish({ url, body: "nb", notBefore: nb });
      await rx.until(() => rx.at("/later").length >= 2, 10_000, "delayed deliveries");
      const byBody = new Map(rx.at("/later").map((r) => [text(r), r.at]));
      assert.ok(byBody.get("d")! - sent >= 1900, "delay delivered early");
      assert.ok(byBody.get("nb")! >= nb * 1000 - 100, "not-before delivered early");
    });

    await t.step("retries on 500, then DLQ; DLQ retry delivers again", async () => {
      let fail = true;
      const url = rx.on("/flaky", () => new Response("no", { status: fail ? 500 : 200 }));
      const res = await q.publish({ url, body: "f", retries: 2 });
      await rx.until(() => rx.at("/flaky").length >= 3, 10_000, "three attempts");
      await sleep(300);
      const tries = rx.at("/flaky");
      assert.equal(tries.length, 3, "1 + 2 retries");
      assert.deepEqual(tries.map((r) => r.headers["upstash-retried"]), ["0", "1", "2"]);
      assert.ok(tries.every((r) => r.headers["upstash-message-id"] === res.messageId));
      let dlq = await q.dlq.listMessages();
      for (let i = 0; i < 50 && !dlq.messages.some((m) => m.messageId === res.messageId); i++) {
        await sleep(100);
        dlq = await q.dlq.listMessages();
      }
      const letter = dlq.messages.find((m) => m.messageId === res.messageId);
      assert.ok(letter, "not in the DLQ");
      assert.equal(letter.url, url);
      fail = false;
      await q.dlq.retry(letter.dlqId);
      await rx.until(() => rx.at("/flaky").length >= 4, 10_000, "redelivery");
      assert.equal(rx.at("/flaky")[3].headers["upstash-message-id"], res.messageId);
      dlq = await q.dlq.listMessages();
      assert.ok(!dlq.messages.some((m) => m.dlqId === letter.dlqId), "a retried letter stayed");
      // A second letter, deleted on its own.
      fail = true;
      const gone = await q.publish({ url, body: "g", retries: 0 });
      const find = async () =>
        (await q.dlq.listMessages()).messages.find((m) => m.messageId === gone.messageId);
      for (let i = 0; i < 50 && !(await find()); i++) await sleep(100);
      const second = await find();
      assert.ok(second, "not dead-lettered");
      await q.dlq.delete(second.dlqId);
      assert.equal(await find(), undefined, "a deleted letter is still listed");
    });

    await t.step("a queue with parallelism 1 keeps order", async () => {
      const url = rx.on("/fifo", async (_r, hits) => {
        await sleep(hits === 0 ? 200 : 5); // the first is slow: a parallel queue would reorder
        return new Response();
      });
      const queue = q.queue({ queueName: "orders" });
      await queue.upsert({ parallelism: 1 });
      for (let i = 0; i < 5; i++) await queue.enqueueJSON({ url, body: { i } });
      await rx.until(() => rx.at("/fifo").length >= 5, 10_000, "five enqueued");
      assert.deepEqual(rx.at("/fifo").map((r) => JSON.parse(text(r)).i), [0, 1, 2, 3, 4]);
      const view = await queue.get();
      assert.equal(view.name, "orders");
      assert.equal(view.parallelism, 1);
      assert.ok((await queue.list()).some((x) => x.name === "orders"));
    });

    await t.step("flow control: parallelism holds across publishes", async () => {
      let active = 0;
      let most = 0;
      const url = rx.on("/flow", async () => {
        most = Math.max(most, ++active);
        await sleep(50);
        active--;
        return new Response();
      });
      const flowControl = { key: "per-user-7", parallelism: 1 };
      for (let i = 0; i < 5; i++) await q.publish({ url, body: `f${i}`, flowControl });
      await rx.until(() => rx.at("/flow").length >= 5, 10_000, "five flow-controlled");
      assert.equal(most, 1, "more than one delivery in flight for the key");
      const info = await q.flowControl.get("per-user-7");
      assert.equal(info.parallelismMax, 1);
      await refused(
        q.publish({ url, body: "x", flowControl: { key: "k", rate: 1, period: 10 } }),
        400,
        /Flow-Control/,
      );
    });

    await t.step("a schedule fires, pauses, is deleted", async () => {
      const url = rx.on("/tick", () => new Response());
      const { scheduleId } = await q.schedules.create({
        destination: url,
        cron: "* * * * * *",
        body: "tick",
      });
      const schedule = await q.schedules.get(scheduleId);
      assert.equal(schedule.cron, "* * * * * *");
      assert.equal(schedule.destination, url);
      assert.equal(schedule.body, "tick");
      assert.ok((await q.schedules.list()).some((x) => x.scheduleId === scheduleId));
      await rx.until(() => rx.at("/tick").length >= 1, 10_000, "a tick");
      assert.equal(await verify(receiver, rx.at("/tick")[0], url), true);
      assert.equal(rx.at("/tick")[0].headers["upstash-schedule-id"], scheduleId);
      await q.schedules.pause({ schedule: scheduleId });
      assert.equal((await q.schedules.get(scheduleId)).isPaused, true);
      await sleep(1200);
      const paused = rx.at("/tick").length;
      await sleep(1500);
      assert.equal(rx.at("/tick").length, paused, "a paused schedule fired");
      await q.schedules.delete(scheduleId);
      await refused(q.schedules.get(scheduleId), 404, /schedule/i);
    });

    await t.step("deduplication drops a repeat", async () => {
      const url = rx.on("/dedup", () => new Response());
      const a = await q.publish({ url, body: "once", deduplicationId: "order-7" });
      const b2 = await q.publish({ url, body: "once", deduplicationId: "order-7" });
      assert.equal(b2.messageId, a.messageId);
      assert.equal(b2.deduplicated, true);
      const c = await q.publish({ url, body: "same", contentBasedDeduplication: true });
      const d = await q.publish({ url, body: "same", contentBasedDeduplication: true });
      assert.equal(d.messageId, c.messageId);
      await rx.until(() => rx.at("/dedup").length >= 2, 10_000, "two deliveries");
      await sleep(500);
      assert.equal(rx.at("/dedup").length, 2, "a duplicate was delivered");
    });

    await t.step("callback and failure callback are called", async () => {
      const ok = rx.on("/cb-ok", () => new Response("done"));
      const bad = rx.on("/cb-bad", () => new Response("nope", { status: 500 }));
      const cb = rx.on("/cb", () => new Response());
      const fcb = rx.on("/fcb", () => new Response());
      const a = await q.publish({ url: ok, body: "a", callback: cb });
      const f = await q.publish({ url: bad, body: "b", retries: 0, failureCallback: fcb });
      await rx.until(
        () => rx.at("/cb").length >= 1 && rx.at("/fcb").length >= 1,
        10_000,
        "callbacks",
      );
      const call = JSON.parse(text(rx.at("/cb")[0]));
      assert.equal(call.sourceMessageId, a.messageId);
      assert.equal(call.status, 200);
      assert.equal(atob(call.body), "done");
      assert.equal(atob(call.sourceBody), "a");
      assert.equal(await verify(receiver, rx.at("/cb")[0], cb), true);
      const failed = JSON.parse(text(rx.at("/fcb")[0]));
      assert.equal(failed.sourceMessageId, f.messageId);
      assert.equal(failed.status, 500);
      assert.ok(failed.dlqId);
    });

    await t.step("batch, URL groups", async () => {
      const one = rx.on("/b1", () => new Response());
      const two = rx.on("/b2", () => new Response());
      await q.urlGroups.addEndpoints({
        name: "team",
        endpoints: [{ url: one }, { name: "second", url: two }],
      });
      const group = await q.urlGroups.get("team");
      assert.equal(group.endpoints.length, 2);
      const res = await q.batch([
        { url: one, body: "to-one" },
        { urlGroup: "team", body: "to-all" },
      ]);
      assert.equal(res.length, 2);
      assert.ok(Array.isArray(res[1]) && res[1].length === 2);
      await rx.until(() => rx.at("/b1").length >= 2 && rx.at("/b2").length >= 1, 10_000, "batch");
      assert.deepEqual(rx.at("/b1").map(text).sort(), ["to-all", "to-one"]);
      assert.equal(rx.at("/b2")[0].headers["upstash-topic-name"], "team");
      assert.equal(await verify(receiver, rx.at("/b2")[0], two), true);
      // A letter of one endpoint goes back to that endpoint alone.
      let down = true;
      const ok = rx.on("/pair-ok", () => new Response());
      const flaky = rx.on("/pair-bad", () => new Response("", { status: down ? 500 : 200 }));
      await q.urlGroups.addEndpoints({ name: "pair", endpoints: [{ url: ok }, { url: flaky }] });
      const [sent] = await q.publish({ urlGroup: "pair", body: "p", retries: 0 }) as {
        messageId: string;
      }[];
      const letterOf = async () =>
        (await q.dlq.listMessages()).messages.find((m) =>
          m.messageId === sent.messageId && m.url === flaky
        );
      for (let i = 0; i < 50 && !(await letterOf()); i++) await sleep(100);
      const letter = await letterOf();
      assert.ok(letter, "the failing endpoint's letter is not in the DLQ");
      down = false;
      await q.dlq.retry(letter.dlqId);
      await rx.until(() => rx.at("/pair-bad").length >= 2, 10_000, "the retried letter");
      await sleep(300);
      assert.equal(rx.at("/pair-ok").length, 1, "a retry went to the endpoint that had succeeded");
      await q.urlGroups.delete("pair");
      await q.urlGroups.delete("team");
      assert.equal((await q.urlGroups.list()).length, 0);
    });

    await t.step("Upstash-Timeout: a slow endpoint is a failed attempt", async () => {
      // The first answer would come after 3 s: a retry before that means the attempt was
      // cut (at 1 s), with 2 s to spare for a busy machine.
      const url = rx.on("/slow", async (_r, hits) => {
        if (hits === 0) await sleep(3000);
        return new Response();
      });
      const started = Date.now();
      await q.publish({ url, body: "s", timeout: 1, retries: 1 });
      await rx.until(() => rx.at("/slow").length >= 2, 10_000, "a retry after the timeout");
      assert.equal(rx.at("/slow")[1].headers["upstash-retried"], "1");
      assert.ok(rx.at("/slow")[1].at - started < 3000, "the first attempt was not cut at 1 s");
    });

    await t.step("cancel a delayed message", async () => {
      const url = rx.on("/cancelled", () => new Response());
      const { messageId } = await q.publish({ url, body: "x", delay: 2 });
      const waiting = await q.messages.get(messageId);
      assert.equal(waiting.url, url);
      assert.equal(waiting.body, "x");
      await q.messages.cancel(messageId);
      await sleep(2500);
      assert.equal(rx.at("/cancelled").length, 0, "a cancelled message was delivered");
    });

    await t.step("rotating signing keys: the new key signs", async () => {
      const rotated = await (await fetch(`${b.url}/v2/keys/rotate`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      })).json() as { current: string; next: string };
      assert.equal(rotated.current, keys.next);
      const url = rx.on("/rotated", () => new Response());
      await q.publish({ url, body: "r" });
      await rx.until(() => rx.at("/rotated").length >= 1, 10_000, "delivery");
      const r = rx.at("/rotated")[0];
      // The old pair still verifies (next is now current); the new pair too.
      assert.equal(await verify(receiver, r, url), true);
      const fresh = new Receiver({
        currentSigningKey: rotated.current,
        nextSigningKey: rotated.next,
      });
      assert.equal(await verify(fresh, r, url), true);
      const old = new Receiver({ currentSigningKey: keys.current, nextSigningKey: keys.current });
      await assert.rejects(verify(old, r, url));
    });

    await t.step("bad input answers QStash's status and stores nothing", async () => {
      const before = (await b.client.listTopics()).length;
      await refused(q.publish({ url: "ftp://127.0.0.1/x", body: "x" }), 400, /name/i);
      await refused(q.publish({ url: "http://169.254.169.254/latest", body: "x" }), 400, /./);
      await refused(q.publish({ url: "http://10.0.0.1/x", body: "x" }), 400, /./);
      await refused(
        q.schedules.create({ destination: rx.on("/c", () => new Response()), cron: "not a cron" }),
        400,
        /cron/i,
      );
      await refused(
        q.publish({ url: rx.on("/big", () => new Response()), body: "x".repeat(70_000) }),
        413,
        /bytes/,
      );
      await refused(
        q.publish({ url: rx.on("/m", () => new Response()), body: "x", method: "HEAD" as "GET" }),
        400,
        /Upstash-Method/,
      );
      await refused(
        q.publish({ url: rx.on("/t", () => new Response()), body: "x", retryDelay: "1000" }),
        400,
        /Upstash-Retry-Delay/i,
      );
      const url = rx.on("/batch-bad", () => new Response());
      await refused(
        q.batch([{ url, body: "ok" }, { url: "http://10.0.0.1/x", body: "no" }]),
        400,
        /./,
      );
      assert.equal((await b.client.listTopics()).length, before);
      await sleep(200);
      for (const p of ["/big", "/m", "/t", "/c", "/batch-bad"]) assert.equal(rx.at(p).length, 0);
    });
  });
}
