// The HTTP /v1 front end over the cluster router (docs/cluster.md "Front ends in a cluster"):
// createApp is given a resolver whose broker is a ClusterClient over three in-process
// groups; the SDK talks to it. A topic on two groups, expanded to the third over HTTP (its
// webhook subscription follows); a batch split per group answers per item; POP receives
// and acks every message once; find-by-id from any group; offsets aggregate the groups.
import assert from "node:assert/strict";
import { withGroups } from "./support/cluster_testing.ts";
import { ClusterTopicAdmin } from "../runtime/cluster/topic_admin.ts";
import { ClusterClient } from "../runtime/cluster/client.ts";
import { createApp } from "../functions/app.ts";
import { TEST_LIMITS } from "../functions/testing.ts";
import { MqClient } from "../client/mod.ts";

const GROUPS = ["g-a", "g-b", "g-c"];

Deno.test({
  name: "HTTP /v1 over a ClusterClient of three groups",
  // The body-read deadline wheel (functions/body.ts) fires once after the last request.
  sanitizeOps: false,
  sanitizeResources: false,
}, () =>
  withGroups(GROUPS, async (g) => {
    await g.register();
    const source = g.source();
    const client = new ClusterClient(source, new ClusterTopicAdmin(source), {
      clusterPopPollSliceMs: 50,
    });
    const app = await createApp({
      broker: { get: () => Promise.resolve(client), failed() {} },
      apiKeys: [],
      limits: TEST_LIMITS,
      log: () => {},
    });
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
    const mq = new MqClient({ baseUrl: `http://127.0.0.1:${server.addr.port}`, retries: 0 });
    try {
      await mq.upsertTopic("orders", {
        readQueueNums: 2,
        writeQueueNums: 2,
        brokerGroups: ["g-a", "g-b"],
      });
      await mq.upsertGroup("billing", { consumeFromWhere: "FIRST_OFFSET" });
      const sub = await mq.upsertSubscription("audit", {
        topic: "orders",
        url: "https://audit.example.com/hook",
      });
      await mq.setSubscriptionPaused("audit", true);
      let route = await mq.addTopicGroup("orders", "g-c");
      assert.deepEqual(route.queues.map((q) => q.queueId), [0, 1, 1024, 1025, 2048, 2049]);
      const copied = await g.brokers.get("g-c")!.listSubscriptions({ revealSecrets: true });
      assert.deepEqual(copied.map((s) => [s.group, s.status, s.secrets]), [[
        "audit",
        "paused",
        sub.secrets,
      ]]);
      source.invalidate("orders");
      route = await mq.topicRoute("orders");
      assert.deepEqual(route.brokerGroups.map((b) => b.name), GROUPS);

      const batch = await mq.produceBatch(
        "orders",
        Array.from({ length: 9 }, (_, i) => ({ body: `b${i}`, keys: [`k${i}`] })),
      );
      assert.ok(batch.every((r) => r.ok), JSON.stringify(batch));
      for (let i = 0; i < 9; i++) await mq.produce("orders", { body: `p${i}` });
      const stored = await Promise.all(
        GROUPS.map(async (n) => (await g.brokers.get(n)!.topicStats("orders")).messages),
      );
      assert.ok(stored.every((n) => n > 0), `messages per group: ${stored}`);

      const got = [];
      for (let i = 0; i < 10 && got.length < 18; i++) {
        got.push(...await mq.receive("billing", { topic: "orders", max: 18, waitMs: 500 }));
      }
      assert.equal(got.length, 18);
      assert.equal(new Set(got.map((m) => m.messageId)).size, 18);
      const acks = await mq.ackBatch("billing", got.map((m) => m.receiptHandle));
      assert.ok(acks.every((a) => a.ok));
      assert.deepEqual(await mq.receive("billing", { topic: "orders", max: 4, waitMs: 200 }), []);

      for (const m of got.filter((m) => m.queueId >= 1024).slice(0, 3)) {
        assert.equal((await mq.getMessageById(m.messageId)).messageId, m.messageId);
      }
      const offsets = await mq.getOffsets("billing", "orders");
      assert.deepEqual(offsets.queues.map((q) => q.queueId), [0, 1, 1024, 1025, 2048, 2049]);
    } finally {
      await server.shutdown();
    }
  }));
