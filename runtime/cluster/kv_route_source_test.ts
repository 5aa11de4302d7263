// KvClusterRouteSource over a real KvPort (a local Deno KV file; etcd in
// kv_route_source_etcd_test.ts) with in-process Brokers as the groups; the rules are in
// tests/support/route_source_checks.ts.
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { checkRace, checkSource, checkSynthesis } from "../../tests/support/route_source_checks.ts";

Deno.test("KvClusterRouteSource on a Deno KV file: create over every live group, cache, links", () =>
  withGroups(["g-a", "g-b"], checkSource));
Deno.test("KvClusterRouteSource: two sources creating one topic at once agree on one record", () =>
  withGroups(["g-a", "g-b", "g-c"], checkRace));
Deno.test("KvClusterRouteSource: topics groups held before the router get a record in name order", () =>
  withGroups(["g-a", "g-b"], checkSynthesis));
