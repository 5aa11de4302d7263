// The cluster router's own cost, in process (issue #26): produce through ClusterClient over
// three in-process brokers vs straight to the same three brokers in turn (same message,
// same process, rounds interleaved), and how evenly round robin spreads messages over the
// groups. No network:
// this isolates the router's work (route lookup, queue choice, id translation) from the
// functions hop, which bench/cluster/cluster_bench.ts measures with real processes.
//   deno run -A bench/cluster/router_bench.ts [--messages 20000] [--rounds 3] [--json]
//   bun run bench/cluster/router_bench.ts     [--messages 20000] [--rounds 3] [--json]
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "../../runtime/cluster/client.ts";
import { QUEUE_ID_STRIDE } from "../../runtime/protocol/cluster_types.ts";
import { commandLine, median, rateOf, round, runtimeInfo, say } from "../support.ts";

const flags = commandLine();
const messages = flags.number("messages", 20_000);
const rounds = flags.number("rounds", 3);
const json = flags.has("json");
const body = new TextEncoder().encode("x".repeat(100));

await withCluster(3, async (groups, routes) => {
  const client = new ClusterClient(routes, {} as ClusterTopicAdminPort);
  await routes.createTopic("bench", 4);
  const direct = groups.map((g) => g.broker);
  const perGroup = [0, 0, 0];
  const directRates: number[] = [];
  const routerRates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let start = performance.now();
    for (let i = 0; i < messages; i++) await direct[i % 3].produce("bench", { body });
    directRates.push(rateOf(messages, start).perSecond);
    start = performance.now();
    for (let i = 0; i < messages; i++) {
      const { queueId } = await client.produce("bench", { body });
      perGroup[Math.floor(queueId / QUEUE_ID_STRIDE)]++;
    }
    routerRates.push(rateOf(messages, start).perSecond);
    if (!json) {
      say(`round ${r + 1}: direct ${round(directRates[r])}/s, router ${round(routerRates[r])}/s`);
    }
  }
  const result = {
    bench: "cluster_router",
    runtime: runtimeInfo().name,
    messages,
    rounds,
    direct_msgs_per_s: round(median(directRates)),
    router_msgs_per_s: round(median(routerRates)),
    router_direct_ratio: round(median(routerRates) / median(directRates)),
    group_balance: round(Math.max(...perGroup) / Math.min(...perGroup)),
  };
  console.log(JSON.stringify(result));
});
