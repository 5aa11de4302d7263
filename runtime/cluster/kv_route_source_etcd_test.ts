// The route source's rules (kv_route_source_test.ts) against etcd v3, reached through
// Platform.openKv as brokers reach it: creation, the CAS race between two sources, and
// synthesis. Skipped, saying why, when etcd is not installed.
import { ETCD_SKIP_REASON, startEtcd } from "../../tests/harness/etcd.ts";
import { pickPlatform } from "../platform/pick.ts";
import { type Groups, withGroups } from "../../tests/support/cluster_testing.ts";
import { checkRace, checkSource, checkSynthesis } from "../../tests/support/route_source_checks.ts";

const cases: [string, string[], (g: Groups) => Promise<void>][] = [
  ["create over every live group, cache, links", ["g-a", "g-b"], checkSource],
  ["two sources creating one topic at once agree on one record", ["g-a", "g-b", "g-c"], checkRace],
  [
    "topics groups held before the router get a record in name order",
    ["g-a", "g-b"],
    checkSynthesis,
  ],
];

Deno.test({
  name: "KvClusterRouteSource on etcd",
  ignore: ETCD_SKIP_REASON !== undefined,
  async fn(t) {
    await using etcd = await startEtcd();
    const platform = await pickPlatform();
    for (const [i, [name, groups, check]] of cases.entries()) {
      await t.step(name, async () => {
        const kv = await platform.openKv(etcd.url, {});
        try {
          await withGroups(groups, check, kv, `Etcd${i}`);
        } finally {
          kv.close();
        }
      });
    }
  },
});
if (ETCD_SKIP_REASON) console.log(`etcd route source tests skipped: ${ETCD_SKIP_REASON}`);
