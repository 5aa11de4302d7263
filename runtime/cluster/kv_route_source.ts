// The cluster router's route source over the coordination store (Deno KV or etcd behind
// KvPort): live broker groups come from the route table each master registers
// (runtime/route_registry.ts), a topic's groups and slots from its route record
// (topic_records.ts); the two are joined here and cached for routeCacheMs.
//
// A topic without a record gets one written with compare-and-set, so racing processes
// agree: one its groups already hold (a single broker that became a cluster: slots in
// group-name order; also groups whose registration listed it within routeExpiryMs but
// are not live right now), or, with `create`, one over every live group.
// Epochs never go back: a registration of a lower epoch than one seen for the group within
// routeExpiryMs is ignored (a deposed master's). invalidate() also stops reads in flight
// from filling the cache with what they read before it.
import type { KvPort } from "../platform/kv_port.ts";
import type { Logger } from "../log.ts";
import { BrokerError } from "../protocol/errors.ts";
import { brokerUrl, readRoutes, type RouteEntry } from "../protocol/routes.ts";
import type { ClusterRouteSource, GroupLink, ResolvedTopicRoute } from "./route_source.ts";
import { newRecord, TopicRecords } from "./topic_records.ts";
import { joinRoute, type LiveGroups } from "./route_join.ts";
import { CLUSTER_ROUTE_CACHE_TOPICS_MAX } from "../config/cluster_router_settings.ts";

/** Makes the client that reaches a group's master at `url` (entry files pass
 * functions/broker_link.ts's; tests pass in-process Brokers). */
export type GroupConnect = (url: string) => GroupLink["client"];

export interface KvRouteSourceOptions {
  kv: KvPort;
  /** Only this cluster's groups (MQ_CLUSTER). */
  cluster: string;
  connect: GroupConnect;
  routeExpiryMs: number;
  routeCacheMs: number;
  /** Most topics' routes cached (clusterRouteCacheTopicsMax); default its default. */
  topicsMax?: number;
  nowMs: () => number;
  /** Warnings (a registration reporting more queues than a slot holds). */
  log?: Logger;
}

export type { LiveGroups } from "./route_join.ts";

export class KvClusterRouteSource implements ClusterRouteSource {
  readonly records: TopicRecords;
  readonly #o: KvRouteSourceOptions;
  /** One link per (group, url, epoch): a new master or address gets a new client. */
  readonly #links = new Map<string, GroupLink>();
  readonly #topics = new Map<string, { route: ResolvedTopicRoute; until: number }>();
  readonly #reading = new Map<string, Promise<ResolvedTopicRoute>>();
  #live: { groups: Promise<LiveGroups>; until: number } | undefined;
  /** Each group's last registration read as live, kept routeExpiryMs past that: a lower
   * epoch is not taken while a higher one was seen (a deposed master's entry), and a
   * synthesized record includes a group restarting or briefly unregistered. */
  readonly #seen = new Map<string, { entry: RouteEntry; liveAtMs: number }>();
  /** Bumped by invalidate(): a read that started before does not fill the cache. */
  #generation = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: KvRouteSourceOptions) {
    this.#o = options;
    this.records = new TopicRecords(options.kv, options.cluster, options.nowMs);
  }

  async groups(): Promise<GroupLink[]> {
    return (await this.live()).links;
  }

  /** The live groups with their registrations (the admin reads their topics). */
  live(): Promise<LiveGroups> {
    const now = this.#o.nowMs();
    if (this.#live && this.#live.until > now) return this.#live.groups;
    const groups = this.#readLive();
    const live = this.#live = { groups, until: now + this.#o.routeCacheMs };
    groups.catch(() => {
      if (this.#live === live) this.#live = undefined;
    });
    return groups;
  }

  /** As ClusterRouteSource.topic(); `fresh` skips the cache and asks every group for its
   * queue counts instead of reading its registration (the admin, after a change). */
  topic(
    topic: string,
    options: { create?: boolean; fresh?: boolean } = {},
  ): Promise<ResolvedTopicRoute> {
    if (options.fresh) {
      this.invalidate(topic);
      return this.#resolve(topic, options.create ?? false, true);
    }
    const cached = this.#topics.get(topic);
    if (cached && cached.until > this.#o.nowMs()) {
      this.#hits++;
      return Promise.resolve(cached.route);
    }
    this.#misses++;
    const key = `${options.create ? "c" : "r"}:${topic}`;
    let reading = this.#reading.get(key);
    if (!reading) {
      const read: Promise<ResolvedTopicRoute> = this.#resolve(topic, options.create ?? false)
        .finally(() => {
          if (this.#reading.get(key) === read) this.#reading.delete(key);
        });
      reading = read;
      this.#reading.set(key, reading);
    }
    return reading;
  }

  invalidate(topic?: string): void {
    this.#generation++;
    if (topic === undefined) {
      this.#topics.clear();
      this.#reading.clear();
    } else {
      this.#topics.delete(topic);
      this.#reading.delete(`c:${topic}`);
      this.#reading.delete(`r:${topic}`);
    }
    this.#live = undefined;
  }

  cacheStats(): { hits: number; misses: number } {
    return { hits: this.#hits, misses: this.#misses };
  }

  async #resolve(topic: string, create: boolean, fresh = false): Promise<ResolvedTopicRoute> {
    const generation = this.#generation;
    // Both reads at once: a cache miss costs one round trip to the store, not two.
    let [live, record] = await Promise.all([this.live(), this.records.get(topic)]);
    if (!record) {
      const holders = [...await holdersOf(live, topic), ...this.#recentHolders(live, topic)]
        .sort();
      const names = holders.length > 0
        ? holders
        : create
        ? live.entries.map((e) => e.brokerName)
        : [];
      if (names.length === 0) {
        throw live.entries.length === 0 && create
          ? new BrokerError("BROKER_UNAVAILABLE", "No live broker group is registered")
          : new BrokerError("TOPIC_NOT_FOUND", `No topic ${topic} in cluster ${this.#o.cluster}`);
      }
      record = await this.records.update(
        topic,
        (current) => current ? undefined : newRecord(topic, names, this.#o.nowMs()),
      );
    }
    const route = await joinRoute(record!, live, { create, fresh, log: this.#o.log });
    if (generation === this.#generation) this.#remember(topic, route);
    return route;
  }

  /** Caches `route`; the Map's order is the order of reads, so beyond topicsMax the
   * topic read longest ago goes (a topic in use is read again every routeCacheMs). */
  #remember(topic: string, route: ResolvedTopicRoute) {
    const topics = this.#topics;
    topics.delete(topic);
    topics.set(topic, { route, until: this.#o.nowMs() + this.#o.routeCacheMs });
    const max = this.#o.topicsMax ?? CLUSTER_ROUTE_CACHE_TOPICS_MAX.default;
    for (const oldest of topics.keys()) {
      if (topics.size <= max) break;
      topics.delete(oldest);
    }
  }

  /** Topics whose route is cached now (tests, /metrics). */
  get cachedTopics(): number {
    return this.#topics.size;
  }

  /** Groups not live now whose registration, seen within routeExpiryMs, listed `topic`
   * (taken at their word: they cannot be asked). */
  #recentHolders(live: LiveGroups, topic: string): string[] {
    const now = this.#o.nowMs();
    return [...this.#seen.values()]
      .filter(({ entry, liveAtMs }) =>
        liveAtMs + this.#o.routeExpiryMs > now &&
        !live.entries.some((e) => e.brokerName === entry.brokerName) &&
        entry.topics.some((t) => t.name === topic)
      ).map(({ entry }) => entry.brokerName).sort();
  }

  /** Drops a registration of a lower epoch than one seen within routeExpiryMs; remembers
   * the others. */
  #current(entries: RouteEntry[]): RouteEntry[] {
    const now = this.#o.nowMs();
    return entries.filter((e) => {
      const seen = this.#seen.get(e.brokerName);
      if (seen && seen.entry.epoch > e.epoch && seen.liveAtMs + this.#o.routeExpiryMs > now) {
        return false;
      }
      this.#seen.set(e.brokerName, { entry: e, liveAtMs: now });
      return true;
    });
  }

  async #readLive(): Promise<LiveGroups> {
    const o = this.#o;
    const entries = this.#current(
      (await readRoutes(o.kv, o.nowMs(), o.routeExpiryMs)).filter((e) => e.cluster === o.cluster),
    );
    const keep = new Set<string>();
    const links = entries.map((e) => {
      const url = brokerUrl(e);
      const key = JSON.stringify([e.brokerName, url, e.epoch]);
      keep.add(key);
      let link = this.#links.get(key);
      if (!link) {
        link = { name: e.brokerName, url, epoch: e.epoch, client: o.connect(url) };
        this.#links.set(key, link);
      }
      if (e.idPrefix) link.idPrefix = e.idPrefix;
      return link;
    });
    for (const key of this.#links.keys()) if (!keep.has(key)) this.#links.delete(key);
    return { entries, links };
  }
}

/** Groups whose registration lists `topic` and that still hold it (a registration is up to
 * routeHeartbeatMs old: a topic deleted since must not come back). A group that cannot be
 * asked is taken at its registration's word. */
async function holdersOf(live: LiveGroups, topic: string): Promise<string[]> {
  const held = await Promise.all(live.entries.map(async (e, i) => {
    if (!e.topics.some((t) => t.name === topic)) return false;
    return await live.links[i].client.getTopic(topic).then(
      () => true,
      (err) => !(err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND"),
    );
  }));
  return live.entries.filter((_, i) => held[i]).map((e) => e.brokerName);
}
