// Three (or more) in-process Brokers on fresh data folders as the broker groups of one
// cluster, behind a small in-memory ClusterRouteSource, for the cluster router's tests.
// Each group's client can be made to fail (as an unreachable master does) and counts calls.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadBrokerConfig } from "../../runtime/config.ts";
import { Broker } from "../../runtime/broker.ts";
import { NodeFilePort } from "../../storage/node_fs_port.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  globalQueueId,
  type GroupRouteState,
  type TopicRouteView,
} from "../../runtime/protocol/cluster_types.ts";
import type {
  ClusterRouteSource,
  GroupLink,
  ResolvedTopicRoute,
} from "../../runtime/cluster/route_source.ts";

export interface TestGroup {
  name: string;
  broker: Broker;
  link: GroupLink;
  /** Calls by method name since the last reset. */
  calls: Map<string, number>;
}

export class FakeRoutes implements ClusterRouteSource {
  readonly records = new Map<string, { name: string; slot: number; state: GroupRouteState }[]>();
  readonly invalidated: (string | undefined)[] = [];
  readonly down = new Set<string>();
  hits = 0;
  misses = 0;

  constructor(readonly all: TestGroup[]) {}

  groups(): Promise<GroupLink[]> {
    return Promise.resolve(
      this.all.filter((g) => !this.down.has(g.name)).map((g) => g.link)
        .sort((a, b) => a.name < b.name ? -1 : 1),
    );
  }

  readonly #cache = new Map<string, ResolvedTopicRoute>();

  /** Cached until invalidate(), as the KV-backed source caches. */
  topic(topic: string, options?: { create?: boolean }): Promise<ResolvedTopicRoute> {
    const cached = this.#cache.get(topic);
    if (cached !== undefined) {
      this.hits++;
      return Promise.resolve(cached);
    }
    this.misses++;
    return this.#read(topic, options).then((route) => {
      this.#cache.set(topic, route);
      return route;
    });
  }

  async #read(topic: string, options?: { create?: boolean }): Promise<ResolvedTopicRoute> {
    let record = this.records.get(topic);
    if (record === undefined && options?.create) {
      await Promise.all(this.all.map((g) => g.broker.upsertTopic(topic, {})));
      record = this.all.map((g, slot) => ({ name: g.name, slot, state: "active" as const }));
      this.records.set(topic, record);
    }
    if (record === undefined) throw new BrokerError("TOPIC_NOT_FOUND", `No topic ${topic}`);
    const groups = [];
    for (const r of record) {
      const g = this.all.find((x) => x.name === r.name)!;
      if (this.down.has(g.name)) continue;
      // A group that lost the topic is left out, as route_join.ts leaves it out.
      const config = await g.broker.getTopic(topic).catch(() => undefined);
      if (config === undefined) continue;
      groups.push({ link: g.link, slot: r.slot, state: r.state, ...config });
    }
    const view: TopicRouteView = {
      topic,
      brokerGroups: groups.map((g) => ({
        name: g.link.name,
        url: g.link.url,
        epoch: 0,
        state: g.state,
        slot: g.slot,
      })),
      queues: groups.flatMap((g) =>
        Array.from({ length: Math.max(g.readQueueNums, g.writeQueueNums) }, (_, id) => ({
          queueId: globalQueueId(g.slot, id),
          brokerGroup: g.link.name,
          localQueueId: id,
          readable: id < g.readQueueNums,
          writable: id < g.writeQueueNums && g.state === "active",
        }))
      ),
    };
    return { topic, groups, view };
  }

  invalidate(topic?: string): void {
    this.invalidated.push(topic);
    if (topic === undefined) this.#cache.clear();
    else this.#cache.delete(topic);
  }

  cacheStats() {
    return { hits: this.hits, misses: this.misses };
  }

  /** The topic on every group with `queues` read and write queues, slots in group order. */
  async createTopic(topic: string, queues: number, groups = this.all): Promise<void> {
    await Promise.all(
      groups.map((g) =>
        g.broker.upsertTopic(topic, { readQueueNums: queues, writeQueueNums: queues })
      ),
    );
    this.records.set(
      topic,
      groups.map((g) => ({ name: g.name, slot: this.all.indexOf(g), state: "active" })),
    );
    this.#cache.delete(topic);
  }
}

/** Opens `n` brokers named g-a, g-b, … (distinct PIDs, so distinct message-id prefixes),
 * runs `f`, closes and removes them. `failing` makes a group's calls throw BROKER_UNAVAILABLE. */
export async function withCluster(
  n: number,
  f: (groups: TestGroup[], routes: FakeRoutes, failing: Set<string>) => Promise<void>,
  env: Record<string, string> = {},
  /** The groups' names (default g-a, g-b, …); `room@name` puts a group in a machine room. */
  names?: string[],
): Promise<void> {
  const platform = await pickPlatform();
  const dirs: string[] = [];
  const groups: TestGroup[] = [];
  const failing = new Set<string>();
  try {
    for (let i = 0; i < n; i++) {
      const dataDir = mkdtempSync(`${tmpdir()}/mq-cluster-test-`);
      dirs.push(dataDir);
      const name = names?.[i] ?? `g-${String.fromCharCode(97 + i)}`;
      const config = loadBrokerConfig({}, {
        DATA_DIR: dataDir,
        PORT: "0",
        MQ_SEGMENT_ZERO_FILL: "false",
        MQ_BROKER_NAME: name,
        ...env,
      }, []);
      const broker = await Broker.open({
        config,
        files: new NodeFilePort(),
        nowMs: () => Date.now(),
        log: () => {},
        runtime: "test",
        pid: 100 + i,
        random: () => 0.25 + i / 10,
        bodyText: platform.bodyText,
        openSqlite: platform.openSqlite,
      });
      const calls = new Map<string, number>();
      const client = new Proxy(broker, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver);
          if (typeof value !== "function" || typeof key !== "string") return value;
          return (...args: unknown[]) => {
            calls.set(key, (calls.get(key) ?? 0) + 1);
            if (failing.has(name)) {
              return Promise.reject(new BrokerError("BROKER_UNAVAILABLE", `${name} is down`));
            }
            return value.apply(target, args);
          };
        },
      });
      await broker.upsertTopic("warm-up", { readQueueNums: 1, writeQueueNums: 1 });
      const idPrefix = (await broker.produce("warm-up", { body: new Uint8Array(1) }))
        .messageId.slice(0, 20);
      const link: GroupLink = { name, url: `http://${name}.test`, epoch: 0, client, idPrefix };
      groups.push({ name, broker, link, calls });
    }
    await f(groups, new FakeRoutes(groups), failing);
  } finally {
    for (const g of groups) await g.broker.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
