// A topic created with `order: true` through the cluster router keeps that in its route
// record, and its resolved route says so (the data plane's fixed hashing list: docs/cluster.md,
// Order per sharding key); changing it back clears it.
import assert from "node:assert/strict";
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { ClusterTopicAdmin } from "./topic_admin.ts";

Deno.test("ordered topic: the route record and the resolved route carry order", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    await g.register();
    const source = g.source();
    const admin = new ClusterTopicAdmin(source);
    await admin.upsertTopic("o", { readQueueNums: 2, writeQueueNums: 2, order: true });
    assert.equal((await source.records.get("o"))!.order, true);
    assert.equal((await source.topic("o", { fresh: true })).order, true);
    await admin.upsertTopic("p", { readQueueNums: 2, writeQueueNums: 2 });
    assert.equal((await source.topic("p", { fresh: true })).order, undefined);
    await admin.upsertTopic("o", { order: false });
    assert.equal((await source.records.get("o"))!.order, undefined);
    assert.equal((await source.topic("o", { fresh: true })).order, undefined);
  }));
