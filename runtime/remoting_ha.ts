// The remoting front end in a replicated group (haMode cluster): every replica serves both
// roles on its own ports. The broker role's core is whichever Broker this replica runs as
// master, looked up per call (a slave answers NOT_LEADER, which remoting sends as
// SERVICE_NOT_AVAILABLE, RocketMQ's answer for a send to a slave). The NameServer answers
// the group from the lease and the published replica states: the live master as brokerId 0
// and the others under their brokerIds, so a failover changes the route; other groups come
// from the KV route table. A lone broker's NameServer (loneRoutes) answers itself and those.
import type {
  BrokerClient,
  RecordApi,
  TransactionApi,
  TransactionCheckHost,
} from "./protocol/core_api.ts";
import type { HaNode } from "./ha/node.ts";
import type { KvPort } from "./platform/kv_port.ts";
import { readRoutes, type RouteEntry } from "./protocol/routes.ts";

type RemotingCore = BrokerClient & RecordApi & TransactionApi & TransactionCheckHost;

/** One broker group as the NameServer answers it (functions/remoting/namesrv.ts). */
export interface NamesrvRoute {
  cluster: string;
  brokerName: string;
  /** Broker id ("0" is the master) to remoting host:port. */
  brokerAddrs: Record<string, string>;
  topics: RouteEntry["topics"];
}

/** A core that forwards every call to `current()` at call time. */
export function leaderCore(current: () => RemotingCore): RemotingCore {
  return new Proxy({} as RemotingCore, {
    get(_target, name) {
      if (name === "then") return undefined; // not a thenable
      return (...args: unknown[]) => {
        const core = current() as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>;
        return core[name].apply(core, args);
      };
    },
  });
}

export interface HaRoutesOptions {
  node: () => HaNode | undefined;
  kv: () => KvPort | undefined;
  cluster: string;
  brokerName: string;
  routeExpiryMs: number;
  nowMs: () => number;
}

/** The NameServer's routes in a replicated group. */
export async function haRoutes(
  o: HaRoutesOptions,
  self: () => Promise<NamesrvRoute>,
): Promise<NamesrvRoute[]> {
  const node = o.node();
  const kv = o.kv();
  if (!node || !kv) return [];
  const [entries, replicas] = await Promise.all([
    readRoutes(kv, o.nowMs(), o.routeExpiryMs),
    node.remotingReplicas(),
  ]);
  const master = replicas.find((r) => r.master);
  const brokerAddrs: Record<string, string> = {};
  if (master) brokerAddrs["0"] = master.remoting;
  for (const r of replicas) {
    // The master is 0, as RocketMQ's; a slave whose own id is 0 takes the master's id.
    if (!r.master) {
      brokerAddrs[String(r.brokerId === 0 ? master?.brokerId ?? 0 : r.brokerId)] ??= r.remoting;
    }
  }
  const mine = entries.find((e) => e.cluster === o.cluster && e.brokerName === o.brokerName);
  // The master knows its topics now; a slave reads what the master last registered.
  const topics = node.role === "master" ? (await self()).topics : mine?.topics ?? [];
  const routes: NamesrvRoute[] = [];
  if (Object.keys(brokerAddrs).length > 0) {
    routes.push({ cluster: o.cluster, brokerName: o.brokerName, brokerAddrs, topics });
  }
  return [...routes, ...otherGroups(entries, o.cluster, o.brokerName)];
}

/** A lone broker's NameServer: itself, and the other broker groups of its cluster in the KV
 * route table (split mode, or a topic spread over groups) that serve remoting; `kv` answers
 * undefined where there is no shared table (a local KV file): itself alone. */
export async function loneRoutes(
  o: {
    kv: () => Promise<KvPort> | undefined;
    cluster: string;
    brokerName: string;
    routeExpiryMs: number;
    nowMs: () => number;
  },
  self: () => Promise<NamesrvRoute>,
): Promise<NamesrvRoute[]> {
  const [me, entries] = await Promise.all([
    self(),
    o.kv()?.then((kv) => readRoutes(kv, o.nowMs(), o.routeExpiryMs)).catch(() => []) ?? [],
  ]);
  return [me, ...otherGroups(entries, o.cluster, o.brokerName)];
}

/** The other groups of this broker's own cluster: clusters sharing one KV store stay apart,
 * as the cluster router keeps them (docs/cluster.md), so a topic's route never mixes in a
 * same-named topic of another cluster. */
function otherGroups(entries: RouteEntry[], cluster: string, brokerName: string): NamesrvRoute[] {
  return entries.filter((e) =>
    e.remotingAddress && e.cluster === cluster && e.brokerName !== brokerName
  ).map((e) => ({
    cluster: e.cluster,
    brokerName: e.brokerName,
    brokerAddrs: { "0": e.remotingAddress! },
    topics: e.topics,
  }));
}
