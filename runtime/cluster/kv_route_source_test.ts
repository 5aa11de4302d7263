// KvClusterRouteSource over a real KvPort (a local Deno KV file; etcd in
// kv_route_source_etcd_test.ts) with in-process Brokers as the groups; the rules are in
// tests/support/route_source_checks.ts.
import assert from "node:assert/strict";
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { checkRace, checkSource, checkSynthesis } from "../../tests/support/route_source_checks.ts";

Deno.test("KvClusterRouteSource on a Deno KV file: create over every live group, cache, links", () =>
  withGroups(["g-a", "g-b"], checkSource));
Deno.test("KvClusterRouteSource: two sources creating one topic at once agree on one record", () =>
  withGroups(["g-a", "g-b", "g-c"], checkRace));
Deno.test("KvClusterRouteSource: topics groups held before the router get a record in name order", () =>
  withGroups(["g-a", "g-b"], checkSynthesis));

Deno.test("KvClusterRouteSource: the route cache holds at most topicsMax topics, read order", () =>
  withGroups(["g-a"], async (g) => {
    await g.register();
    const source = g.source({ topicsMax: 2 });
    for (const t of ["t1", "t2", "t3"]) await source.topic(t, { create: true });
    assert.equal(source.cachedTopics, 2);
    const misses = () => source.cacheStats().misses;
    const m = misses();
    await source.topic("t3");
    await source.topic("t2");
    assert.equal(misses(), m, "the two read last stay cached");
    await source.topic("t1");
    assert.equal(misses(), m + 1, "the one read first was forgotten, and is read again");
    assert.equal(source.cachedTopics, 2);
    await source.topic("t3");
    assert.equal(misses(), m + 1, "t3 was read from the store after t2: it stays");
    await source.topic("t2");
    assert.equal(misses(), m + 2, "t2 went to make room for t1");
  }));
