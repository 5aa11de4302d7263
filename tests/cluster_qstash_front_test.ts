// The QStash front end (/v2) over the cluster router (docs/cluster.md "Front ends in a
// cluster"): createApp is given a resolver whose broker is a ClusterClient over three
// in-process groups and clusterQstashOf over the groups' own QStash calls. With the real
// @upstash/qstash Client and Receiver: publishes spread over the groups are each delivered
// once and verify with the keys GET /v2/keys answers (every group signs with them, also
// after a rotation); the DLQ lists and deletes letters of every group.
import assert from "node:assert/strict";
import { Client, Receiver } from "@upstash/qstash";
import { withGroups } from "./support/cluster_testing.ts";
import { type Received, Receiver as Rx } from "./harness/receiver.ts";
import { ClusterTopicAdmin } from "../runtime/cluster/topic_admin.ts";
import { ClusterClient } from "../runtime/cluster/client.ts";
import { clusterQstashOf } from "../runtime/cluster/qstash_router.ts";
import type { Broker } from "../runtime/broker.ts";
import { QSTASH_PUBLISH_TOPIC } from "../runtime/protocol/qstash.ts";
import { createApp } from "../functions/app.ts";
import { TEST_LIMITS } from "../functions/testing.ts";

const ENV = { MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1", MQ_QSTASH_RETRY_BACKOFF_MS: "50" };
const GROUPS = ["g-a", "g-b", "g-c"];
const text = (r: Received) => new TextDecoder().decode(r.body);

Deno.test({
  name: "QStash front end over a ClusterClient of three groups",
  // The client leaves bodies of answers it does not parse unread, and its timers running.
  sanitizeResources: false,
  sanitizeOps: false,
}, () =>
  withGroups(
    GROUPS,
    async (g) => {
      await using rx = new Rx();
      await g.register();
      const source = g.source();
      const client = new ClusterClient(source, new ClusterTopicAdmin(source));
      const app = await createApp({
        broker: { get: () => Promise.resolve(client), failed() {} },
        apiKeys: [],
        limits: TEST_LIMITS,
        log: () => {},
        qstash: clusterQstashOf((b) => (b as unknown as Broker).qstash),
      });
      const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
      const base = `http://127.0.0.1:${server.addr.port}`;
      const q = new Client({ baseUrl: base, token: "any", retry: false, enableTelemetry: false });
      const receiverOf = async () => {
        const keys = await (await fetch(`${base}/v2/keys`)).json();
        return new Receiver({ currentSigningKey: keys.current, nextSigningKey: keys.next });
      };
      const signedOnce = async (path: string, ids: string[], receiver: Receiver) => {
        await rx.until(() => rx.at(path).length >= ids.length, 10_000, `deliveries to ${path}`);
        await new Promise((r) => setTimeout(r, 200)); // a duplicate would come now
        const got = rx.at(path);
        assert.deepEqual(got.map((r) => r.headers["upstash-message-id"]).sort(), [...ids].sort());
        const url = `${rx.url}${path}`;
        for (const r of got) {
          const signature = r.headers["upstash-signature"];
          assert.equal(await receiver.verify({ signature, body: text(r), url }), true);
        }
      };
      try {
        // 8 queues per group, taken in turn: 17 publishes reach all three groups.
        const url = rx.on("/hook", () => new Response("ok"));
        const ids = [];
        for (let i = 0; i < 17; i++) ids.push((await q.publish({ url, body: `m${i}` })).messageId);
        const perGroup = await Promise.all(
          GROUPS.map(async (n) =>
            (await g.brokers.get(n)!.topicStats(QSTASH_PUBLISH_TOPIC)).messages
          ),
        );
        assert.ok(perGroup.every((n) => n > 0), `messages per group: ${perGroup}`);
        await signedOnce("/hook", ids, await receiverOf());

        // Rotation: every group signs with the new current key.
        const before = await (await fetch(`${base}/v2/keys`)).json();
        const rotated = await (await fetch(`${base}/v2/keys/rotate`, { method: "POST" })).json();
        assert.equal(rotated.current, before.next);
        const only = new Receiver({ currentSigningKey: rotated.current, nextSigningKey: "sig_x" });
        const after = rx.on("/after", () => new Response("ok"));
        const more = [];
        for (let i = 0; i < 6; i++) {
          more.push((await q.publish({ url: after, body: `r${i}` })).messageId);
        }
        await signedOnce("/after", more, only);

        // Dead letters of every group, in one listing; a delete reaches the group holding it.
        const dead = rx.on("/dead", () => new Response("no", { status: 500 }));
        const failed = [];
        for (let i = 0; i < 6; i++) {
          failed.push((await q.publish({ url: dead, body: `d${i}`, retries: 0 })).messageId);
        }
        let letters = (await q.dlq.listMessages()).messages;
        for (let i = 0; i < 50 && letters.length < failed.length; i++) {
          await new Promise((r) => setTimeout(r, 100));
          letters = (await q.dlq.listMessages()).messages;
        }
        assert.deepEqual(letters.map((m) => m.messageId).sort(), [...failed].sort());
        await q.dlq.delete(letters[5].dlqId);
        assert.equal((await q.dlq.listMessages()).messages.length, 5);

        // A queue (parallelism 1: strict FIFO) and a flow-control key live on one group each:
        // every group delivers its own queues, so a spread queue would not keep its order.
        const fifo = rx.on("/fifo", () => new Response("ok"));
        const queue = q.queue({ queueName: "fifo" });
        for (let i = 0; i < 8; i++) await queue.enqueue({ url: fifo, body: `f${i}` });
        await rx.until(() => rx.at("/fifo").length >= 8, 10_000, "queue deliveries");
        assert.deepEqual(rx.at("/fifo").map(text), Array.from({ length: 8 }, (_, i) => `f${i}`));
        assert.equal((await client.topicRoute("qstash-q-fifo")).brokerGroups.length, 1);
        const flow = rx.on("/flow", () => new Response("ok"));
        await q.publish({ url: flow, body: "fc", flowControl: { key: "k1", parallelism: 1 } });
        await rx.until(() => rx.at("/flow").length >= 1, 10_000, "flow-controlled delivery");
        assert.equal((await client.topicRoute("qstash-f-k1")).brokerGroups.length, 1);

        // A schedule lives on one home group; its details are found from any function.
        const { scheduleId } = await q.schedules.create({
          destination: `${rx.url}/cron`,
          cron: "0 0 1 1 *",
          body: "tick",
        });
        const schedule = await q.schedules.get(scheduleId);
        assert.equal(schedule.destination, `${rx.url}/cron`);
        assert.equal(schedule.body, "tick");
        assert.ok((await q.schedules.list()).some((x) => x.scheduleId === scheduleId));

        // PUT /v1/qstash/keys (the plumbing split-mode functions use) sets every group's keys.
        const keys = { current: "sig_" + "c".repeat(28), next: "sig_" + "n".repeat(28) };
        const put = await fetch(`${base}/v1/qstash/keys`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(keys),
        });
        assert.deepEqual(await put.json(), keys);
        for (const n of GROUPS) {
          assert.deepEqual(await g.brokers.get(n)!.qstash.qstashSigningKeys(), keys);
        }
      } finally {
        await server.shutdown();
      }
    },
    undefined,
    undefined,
    ENV,
  ));
