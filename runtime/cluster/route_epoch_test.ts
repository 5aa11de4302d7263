// The route source's view of registrations over time (issue #26 review 14, 17): a lower
// epoch than one seen is ignored until the higher one expires; invalidate() during a read
// keeps that read out of the cache; a synthesized record includes a group that registered
// the topic recently but is not live right now.
import assert from "node:assert/strict";
import { encodeRoute, ROUTES_PREFIX } from "../protocol/routes.ts";
import { CLUSTER, type Groups, urlOf, withGroups } from "../../tests/support/cluster_testing.ts";
import { KvClusterRouteSource } from "./kv_route_source.ts";

const EXPIRY = 60_000;

function sourceAt(g: Groups, clock: { now: number }) {
  return new KvClusterRouteSource({
    kv: g.kv,
    cluster: CLUSTER,
    connect: (url) => g.connect(url),
    routeExpiryMs: EXPIRY,
    routeCacheMs: 60_000,
    nowMs: () => clock.now,
  });
}

function entry(g: Groups, name: string, epoch: number, at: number) {
  return g.kv.set(
    [...ROUTES_PREFIX, CLUSTER, name],
    encodeRoute({
      cluster: CLUSTER,
      brokerName: name,
      address: `${name}.test:1`,
      epoch,
      topics: g.brokers.get(name)!.topicConfigs().map((t) => ({
        name: t.name,
        readQueueNums: t.readQueueNums,
        writeQueueNums: t.writeQueueNums,
        perm: t.perm,
      })),
      updatedAtMs: at,
    }),
  );
}

Deno.test("route source: a lower epoch than one seen is ignored until the higher one expires", () =>
  withGroups(["g-a"], async (g) => {
    const clock = { now: 1_000_000 };
    const source = sourceAt(g, clock);
    await entry(g, "g-a", 2, clock.now);
    assert.deepEqual((await source.groups()).map((l) => [l.name, l.epoch]), [["g-a", 2]]);
    await entry(g, "g-a", 1, clock.now); // a deposed master's late heartbeat
    source.invalidate();
    assert.deepEqual(await source.groups(), [], "the lower epoch is not taken");
    clock.now += EXPIRY + 1;
    await entry(g, "g-a", 1, clock.now);
    source.invalidate();
    assert.deepEqual((await source.groups()).map((l) => [l.name, l.epoch]), [["g-a", 1]]);
    assert.equal((await source.groups())[0].url, urlOf("g-a"));
  }));

Deno.test("route source: invalidate() during a read keeps that read out of the cache", () =>
  withGroups(["g-a"], async (g) => {
    await g.brokers.get("g-a")!.upsertTopic("t", {});
    await g.register();
    const source = g.source();
    const reading = source.topic("t");
    source.invalidate("t");
    await reading;
    await source.topic("t");
    assert.deepEqual(source.cacheStats(), { hits: 0, misses: 2 });
    await source.topic("t");
    assert.deepEqual(source.cacheStats(), { hits: 1, misses: 2 });
  }));

Deno.test("route source: a synthesized record includes a group seen holding the topic but not live now", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    for (const b of g.brokers.values()) await b.upsertTopic("held", {});
    await g.register();
    const source = g.source();
    assert.equal((await source.groups()).length, 2);
    await g.kv.delete([...ROUTES_PREFIX, CLUSTER, "g-b"]); // restarting: unregistered
    source.invalidate();
    const route = await source.topic("held");
    assert.deepEqual(route.view.brokerGroups.map((b) => b.name), ["g-a"], "only live groups serve");
    assert.deepEqual(
      (await source.records.get("held"))!.groups.map((x) => `${x.brokerGroup}@${x.slot}`),
      ["g-a@0", "g-b@1"],
    );
  }));
