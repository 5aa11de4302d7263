// The two halves together, in process: ClusterClient over the KV-backed route source and
// the control plane's ClusterTopicAdmin (a Deno KV file, three in-process Brokers as the
// groups). A topic created through the client spreads over the groups; produce, POP and
// assignment use global ids; drain stops writes to a group and keeps its reads; expansion
// makes new queues that producers and consumers use.
import assert from "node:assert/strict";
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { ClusterTopicAdmin } from "./topic_admin.ts";
import { ClusterClient } from "./client.ts";

const body = new TextEncoder().encode("kv");
const sorted = (ids: number[]) => [...new Set(ids)].sort((a, b) => a - b);

Deno.test("ClusterClient over KvClusterRouteSource and ClusterTopicAdmin", () =>
  withGroups(["g-a", "g-b", "g-c"], async (g) => {
    await g.register();
    const source = g.source();
    const client = new ClusterClient(source, new ClusterTopicAdmin(source), {
      clusterPopPollSliceMs: 50,
    });
    await client.upsertTopic("orders", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a", "g-b"],
    });
    await client.upsertGroup("billing", { consumeFromWhere: "FIRST_OFFSET" });
    const route = await client.topicRoute("orders");
    assert.deepEqual(route.queues.map((q) => q.queueId), [0, 1024]);

    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await client.produce("orders", { body })).queueId);
    assert.deepEqual(sorted(ids), [0, 1024]);

    // Expansion: g-c joins with slot 2; producers and consumers use its queue.
    await client.addTopicGroup("orders", "g-c");
    source.invalidate("orders");
    const more = [];
    for (let i = 0; i < 6; i++) more.push((await client.produce("orders", { body })).queueId);
    assert.deepEqual(sorted(more), [0, 1024, 2048]);
    for (const c of ["c1", "c2", "c3"]) {
      await client.heartbeat("billing", { clientId: c, subscriptions: [{ topic: "orders" }] });
    }
    const shares = await Promise.all(
      ["c1", "c2", "c3"].map((c) => client.assignment("billing", c, "orders")),
    );
    assert.deepEqual(shares.map((s) => s.queueIds.length), [1, 1, 1]);

    // Drain g-a: no more writes there, its messages are still received.
    await client.drainTopicGroup("orders", "g-a");
    source.invalidate("orders");
    const drained = [];
    for (let i = 0; i < 6; i++) drained.push((await client.produce("orders", { body })).queueId);
    assert.deepEqual(sorted(drained), [1024, 2048]);
    const got = [];
    for (let i = 0; i < 6 && got.length < 18; i++) {
      got.push(...await client.receive("billing", { topic: "orders", max: 18 }));
    }
    assert.equal(got.length, 18);
    assert.deepEqual(sorted(got.map((m) => m.queueId)), [0, 1024, 2048]);
    const acks = await client.ackBatch("billing", got.map((m) => m.receiptHandle));
    assert.ok(acks.every((a) => a.ok));
    const offsets = await client.getOffsets("billing", "orders");
    assert.deepEqual(offsets.queues.map((q) => q.queueId), [0, 1024, 2048]);
  }));
