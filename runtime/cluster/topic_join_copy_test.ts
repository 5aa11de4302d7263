// A broker group that joins a topic serves its consumers as the others do (in process, a
// Deno KV file, in-process Brokers): the topic's webhook subscription (same secret) and the
// consumer groups' settings and transaction checks are copied before the group is writable.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Buffer } from "node:buffer";
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { Receiver } from "../../tests/harness/receiver.ts";
import type { Received } from "../../tests/harness/receiver.ts";
import { ClusterTopicAdmin } from "./topic_admin.ts";
import { ClusterClient } from "./client.ts";

const body = new TextEncoder().encode("joined");
const ENV = { MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1" };

function verified(r: Received, secret: string): boolean {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const id = r.headers["webhook-id"];
  const ts = r.headers["webhook-timestamp"];
  const mac = createHmac("sha256", key).update(`${id}.${ts}.`).update(r.body).digest("base64");
  return r.headers["webhook-signature"].split(" ").includes(`v1,${mac}`);
}

const open = (f: Parameters<typeof withGroups>[1]) =>
  withGroups(["g-a", "g-b"], f, undefined, undefined, ENV);

Deno.test("addTopicGroup copies the topic's webhook subscription, same secret", () =>
  open(async (g) => {
    await using receiver = new Receiver();
    await g.register("g-a");
    const source = g.source();
    const client = new ClusterClient(source, new ClusterTopicAdmin(source));
    await client.upsertTopic("hooks", {
      readQueueNums: 2,
      writeQueueNums: 2,
      brokerGroups: ["g-a"],
    });
    const url = receiver.on("/hook", () => new Response("ok"));
    const sub = await client.upsertSubscription("hook-sub", { topic: "hooks", url });
    await client.produce("hooks", { body, queueId: 0 });
    await receiver.until(() => receiver.at("/hook").length === 1, 5000, "first delivery");

    await g.register("g-b");
    await client.addTopicGroup("hooks", "g-b");
    source.invalidate("hooks");
    const route = await client.topicRoute("hooks");
    assert.deepEqual(route.queues.map((q) => q.queueId), [0, 1, 1024, 1025]);
    for (const queueId of [1024, 1025]) await client.produce("hooks", { body, queueId });
    await receiver.until(() => receiver.at("/hook").length === 3, 5000, "deliveries of g-b");
    assert.ok(receiver.at("/hook").every((r) => verified(r, sub.secrets[0])));
    const ids = receiver.at("/hook").map((r) => r.headers["webhook-id"]);
    assert.equal(new Set(ids).size, 3);
    assert.equal((await g.brokers.get("g-b")!.getSubscription("hook-sub")).topic, "hooks");
  }));

Deno.test("a joining group gets consumer groups and transaction checks before it is writable", () =>
  open(async (g) => {
    await g.register("g-a"); // g-b comes up later: it never saw the consumer group
    const source = g.source();
    const client = new ClusterClient(source, new ClusterTopicAdmin(source));
    await client.upsertTopic("jobs", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a"],
    });
    await client.upsertGroup("workers", { retryMaxTimes: 0, retryBackoffMs: [10] });
    const check = await client.setTransactionCheck("txp", { url: "http://127.0.0.1:9/check" });

    await g.register("g-b");
    source.invalidate();
    // Through upsertTopic with a new brokerGroups list (the other way to expand).
    await client.upsertTopic("jobs", { brokerGroups: ["g-a", "g-b"] });
    const copied = await g.brokers.get("g-b")!.getGroup("workers");
    assert.equal(copied.retryMaxTimes, 0);
    assert.deepEqual(copied.retryBackoffMs, [10]);
    const checks = await g.brokers.get("g-b")!.listTransactionChecks({ revealSecrets: true });
    assert.deepEqual(checks, [check]);

    // Messages written to g-b before any consumer asked there are received (LAST_OFFSET
    // starts at the first message of the new queue), and a nack dead-letters at once.
    source.invalidate("jobs");
    await client.produce("jobs", { body, queueId: 1024 });
    let got = await client.receive("workers", { topic: "jobs", max: 4, waitMs: 2000 });
    assert.deepEqual(got.map((m) => m.queueId), [1024]);
    await client.nack("workers", got[0].receiptHandle, 0);
    got = await client.receive("workers", { topic: "jobs", max: 4, waitMs: 300 });
    assert.equal(got.length, 0);
    const dlq = await g.brokers.get("g-b")!.listDlq("workers");
    assert.equal(dlq.messages.length, 1);
  }));
