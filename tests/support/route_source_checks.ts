// The route source's rules, run by kv_route_source_test.ts (a local Deno KV file) and
// kv_route_source_etcd_test.ts (etcd v3): creation spread over every live group, the CAS
// race, synthesis for topics groups held before the cluster router, the cache, and the
// cluster filter.
import assert from "node:assert/strict";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { encodeRoute, ROUTES_PREFIX } from "../../runtime/protocol/routes.ts";
import { decodeTopicRoute, topicRouteKey } from "../../runtime/cluster/route_record.ts";
import type { Groups } from "./cluster_testing.ts";

const groupsOf = (v: { brokerGroups: { name: string; slot: number; state: string }[] }) =>
  v.brokerGroups.map((g) => `${g.name}@${g.slot}:${g.state}`);

export async function checkSource(g: Groups): Promise<void> {
  await g.register();
  const source = g.source();

  // No record, no group holds it: not found without create; nothing written.
  await assert.rejects(
    source.topic("t1"),
    (e) => e instanceof BrokerError && e.code === "TOPIC_NOT_FOUND",
  );
  assert.equal(await g.kv.get(topicRouteKey(g.cluster, "t1")), null);

  // With create: one record over every live group, in name order; the topic made on each.
  const r = await source.topic("t1", { create: true });
  assert.deepEqual(groupsOf(r.view), ["g-a@0:active", "g-b@1:active"]);
  assert.deepEqual(r.view.queues.map((q) => q.queueId), [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    1024,
    1025,
    1026,
    1027,
    1028,
    1029,
    1030,
    1031,
  ]);
  assert.ok(r.view.queues.every((q) => q.readable && q.writable));
  assert.equal((await g.brokers.get("g-b")!.getTopic("t1")).readQueueNums, 8);
  assert.equal(r.groups[0].link.idPrefix, g.brokers.get("g-a")!.idPrefix);
  assert.equal(r.groups[0].link.url, "http://g-a.test:1");

  // Cached: a hit, the same object; invalidate() makes the next a miss.
  const before = source.cacheStats();
  assert.equal(await source.topic("t1"), r);
  assert.equal(source.cacheStats().hits, before.hits + 1);
  source.invalidate("t1");
  const again = await source.topic("t1");
  assert.notEqual(again, r);
  assert.deepEqual(again.view, r.view);
  assert.equal(source.cacheStats().misses, before.misses + 1);

  // A group of the record that lost the topic: no queues there, unless `create` makes it.
  await g.brokers.get("g-b")!.deleteTopic("t1");
  source.invalidate("t1");
  const lost = await source.topic("t1", { fresh: true });
  assert.deepEqual(lost.view.queues.filter((q) => q.brokerGroup === "g-b"), []);
  source.invalidate("t1");
  await source.topic("t1", { create: true, fresh: true });
  assert.equal((await g.brokers.get("g-b")!.getTopic("t1")).readQueueNums, 8);

  // One client per (group, url, epoch): the same link objects after a re-read.
  source.invalidate();
  const links = await source.groups();
  assert.deepEqual(links.map((l) => l.name), ["g-a", "g-b"]);
  assert.equal(links[0], again.groups[0].link);
}

export async function checkRace(g: Groups): Promise<void> {
  // Two processes create the same topic at once, seeing different live groups (a third
  // registered between their reads): one record wins, and both answer its slots.
  await g.register("g-a", "g-b");
  const early = g.source();
  await early.live();
  await g.register("g-c");
  const late = g.source();
  const [a, b] = await Promise.all([
    early.topic("race", { create: true }),
    late.topic("race", { create: true }),
  ]);
  const stored = decodeTopicRoute((await g.kv.get(topicRouteKey(g.cluster, "race")))!.value)!;
  const slots = stored.groups.map((x) => `${x.brokerGroup}@${x.slot}:${x.state}`);
  assert.equal(stored.nextSlot, stored.groups.length);
  // Each answers the stored record's slots (the early one knows only the groups it saw).
  for (const r of [a, b]) assert.ok(groupsOf(r.view).every((x) => slots.includes(x)));
  assert.deepEqual(groupsOf(b.view), slots);
  early.invalidate();
  assert.deepEqual((await early.topic("race")).view, b.view);
}

export async function checkSynthesis(g: Groups): Promise<void> {
  // A topic two groups held before any record (a single broker that became a cluster):
  // slots in group-name order, whatever order they were created in.
  await g.brokers.get("g-b")!.upsertTopic("old", { readQueueNums: 2, writeQueueNums: 2 });
  await g.brokers.get("g-a")!.upsertTopic("old", { readQueueNums: 1, writeQueueNums: 1 });
  await g.register();
  // Another cluster's entries are not this router's.
  await g.kv.set(
    [...ROUTES_PREFIX, "Other", "g-z"],
    encodeRoute({
      cluster: "Other",
      brokerName: "g-z",
      address: "g-z.test:1",
      epoch: 0,
      topics: [{ name: "old", readQueueNums: 1, writeQueueNums: 1, perm: 6 }],
      updatedAtMs: Date.now(),
    }),
  );
  const r = await g.source().topic("old");
  assert.deepEqual(groupsOf(r.view), ["g-a@0:active", "g-b@1:active"]);
  assert.deepEqual(r.view.queues.map((q) => q.queueId), [0, 1024, 1025]);
  assert.ok(await g.kv.get(topicRouteKey(g.cluster, "old")), "the record was written");
}
