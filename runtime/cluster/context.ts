// What every part of the cluster router shares: the route source, the fault tracker, the
// settings, and `call`, the one way a router part talks to a group (a failure of the group
// marks it and drops the cached route, so the next call re-reads the coordination store).
import { BrokerError } from "../protocol/errors.ts";
import { QUEUE_ID_STRIDE } from "../protocol/cluster_types.ts";
import { signalOf, type SignalSource } from "../protocol/types.ts";
import type { ClusterRouteSource, GroupLink, ResolvedTopicRoute } from "./route_source.ts";
import { FaultTracker, isGroupFailure } from "./fault.ts";
import { TopicQueues } from "./queue_map.ts";
import { CLUSTER_ROUTER_SETTINGS } from "../config/cluster_router_settings.ts";

export interface ClusterRouterOptions {
  clusterSendRetryTimes?: number;
  clusterSendLatencyFaultEnable?: boolean;
  clusterFaultBackoffMs?: number;
  clusterPopPollSliceMs?: number;
  clusterAutoCreateTopicEnable?: boolean;
  clusterRotationKeysMax?: number;
  clusterRouteCacheTopicsMax?: number;
  clusterCheckRelayWaitMs?: number;
  clusterCheckRelayMax?: number;
  clusterCheckRelayRetryMs?: number;
  clusterProduceCoalesceEnable?: boolean;
  clusterProduceCoalesceItemsMax?: number;
  clusterProduceCoalesceBytesMax?: number;
  clusterProduceCoalesceInFlightMax?: number;
  /** Where a broadcast that some live groups failed is reported (default console.warn). */
  log?: (line: string) => void;
  nowMs?: () => number;
}

const CREATE = { create: true } as const;

type Settings = Required<Omit<ClusterRouterOptions, "nowMs" | "log">>;

export class ClusterContext {
  readonly settings: Settings;
  readonly faults: FaultTracker;
  readonly nowMs: () => number;
  readonly log: (line: string) => void;
  /** Broadcast writes that some live group missed (fanout.ts broadcast). */
  partialBroadcasts = 0;
  /** When each broker group's misses were last logged (group names come from the route
   * source, so the map is as large as the cluster). */
  readonly #loggedMiss = new Map<string, number>();
  readonly #queues = new WeakMap<ResolvedTopicRoute, TopicQueues>();

  constructor(readonly routes: ClusterRouteSource, options: ClusterRouterOptions = {}) {
    const defaults = Object.fromEntries(CLUSTER_ROUTER_SETTINGS.map((r) => [r.name, r.default]));
    const { nowMs, log, ...given } = options;
    this.log = log ?? ((line) => console.warn(line));
    const set = Object.entries(given).filter(([, v]) => v !== undefined);
    this.settings = { ...defaults, ...Object.fromEntries(set) } as Settings;
    this.nowMs = nowMs ?? Date.now;
    this.faults = new FaultTracker(
      this.settings.clusterFaultBackoffMs,
      this.settings.clusterSendLatencyFaultEnable,
      this.nowMs,
    );
  }

  /** The topic's queues; built once per resolved route (the source caches the route, so a
   * steady state builds nothing per call: bench/cluster/router_bench.ts). */
  async queues(topic: string, create = false): Promise<TopicQueues> {
    const route = await this.routes.topic(topic, create ? CREATE : undefined);
    let queues = this.#queues.get(route);
    if (queues === undefined) this.#queues.set(route, queues = new TopicQueues(route));
    return queues;
  }

  /** The owner of a global queue id; an unknown slot re-reads the route once, then is the
   * broker's QUEUE_NOT_FOUND. */
  async owner(topic: string, queueId: number, create = false) {
    let queues = await this.queues(topic, create);
    let found = queues.owner(queueId);
    if (found === undefined) {
      this.routes.invalidate(topic);
      queues = await this.queues(topic, create);
      found = queues.owner(queueId);
    }
    if (found === undefined) {
      throw new BrokerError(
        "QUEUE_NOT_FOUND",
        `No queue ${queueId} in topic ${topic}: its queues are ${ranges(queues) || "none"} ` +
          `(GET /v1/topics/${topic}/route lists them)`,
      );
    }
    return { queues, ...found };
  }

  /** Live groups, sorted by name. */
  groups(): Promise<GroupLink[]> {
    return this.routes.groups();
  }

  /** The live group named `name` (a wrapped receipt handle or transaction id names it). */
  async liveGroup(name: string): Promise<GroupLink | undefined> {
    return (await this.groups()).find((l) => l.name === name);
  }

  /** Counts a broadcast that `missed` groups did not take, and logs it, at most once per
   * group per clusterFaultBackoffMs (every heartbeat misses a group in failover). */
  partialBroadcast(
    what: string,
    reached: readonly GroupLink[],
    missed: readonly { link: GroupLink; err: unknown }[],
  ): void {
    this.partialBroadcasts++;
    const now = this.nowMs();
    const fresh = missed.filter((m) =>
      now - (this.#loggedMiss.get(m.link.name) ?? -Infinity) >= this.settings.clusterFaultBackoffMs
    );
    if (fresh.length === 0) return;
    for (const m of fresh) this.#loggedMiss.set(m.link.name, now);
    const why = (err: unknown) => err instanceof Error ? err.message : String(err);
    this.log(
      `cluster router: ${what} reached ${reached.map((l) => l.name).join(",")} but not ${
        fresh.map((m) => `${m.link.name} (${why(m.err)})`).join(", ")
      } (repeats of this group's misses are not logged for ${this.settings.clusterFaultBackoffMs} ms)`,
    );
  }

  /** Runs `f` against one group: a group failure marks it and invalidates `topic`'s route
   * (the source drops its live-group cache with it). Without a topic (an ack, a wrapped
   * id), every route is dropped, but only on the group's first failure in its backoff
   * window, so an outage does not empty the cache on every call. A call the caller ended
   * (`signal` aborted, or an AbortError / TimeoutError) is no failure of the group. */
  async call<T>(
    link: GroupLink,
    topic: string | undefined,
    f: (client: GroupLink["client"]) => Promise<T>,
    signal?: SignalSource,
  ): Promise<T> {
    try {
      const value = await f(link.client);
      this.faults.succeeded(link.name);
      return value;
    } catch (err) {
      if (isGroupFailure(err) && !signalOf(signal)?.aborted) {
        const first = this.faults.available(link.name, link.epoch);
        this.faults.failed(link.name, link.epoch);
        if (topic !== undefined || first) this.routes.invalidate(topic);
      }
      throw err;
    }
  }
}

function ranges(queues: TopicQueues): string {
  return queues.all().map((g) => {
    const first = g.slot * QUEUE_ID_STRIDE;
    return `${first}-${first + Math.max(g.readQueueNums, g.writeQueueNums) - 1}`;
  }).join(", ");
}
