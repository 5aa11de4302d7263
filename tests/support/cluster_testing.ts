// In-process broker groups for the cluster router's tests: N Brokers (each its own group),
// a coordination store (a local Deno KV file, or any KvPort), route entries written as
// their masters would (runtime/route_registry.ts), and a connect() that maps each group's
// URL to its Broker.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Broker } from "../../runtime/broker.ts";
import type { KvPort } from "../../runtime/platform/kv_port.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";
import { encodeRoute, ROUTES_PREFIX } from "../../runtime/protocol/routes.ts";
import type { GroupLink } from "../../runtime/cluster/route_source.ts";
import { KvClusterRouteSource } from "../../runtime/cluster/kv_route_source.ts";
import { withBroker } from "./broker_testing.ts";

export const CLUSTER = "TestCluster";

export interface Groups {
  /** The cluster the groups register in (CLUSTER unless given). */
  cluster: string;
  brokers: Map<string, Broker>;
  kv: KvPort;
  /** Writes every group's route entry now (a heartbeat), with its current topics. */
  register(...names: string[]): Promise<void>;
  connect(url: string): GroupLink["client"];
  source(o?: { routeCacheMs?: number; topicsMax?: number }): KvClusterRouteSource;
}

export const urlOf = (name: string) => `http://${name}.test:1`;

/** Opens a group per name over a fresh local KV file (or `kv`), runs `f`, closes all;
 * `env`: settings every group's broker is opened with. */
export async function withGroups(
  names: string[],
  f: (g: Groups) => Promise<void>,
  kv?: KvPort,
  cluster = CLUSTER,
  env: Record<string, string> = {},
): Promise<void> {
  const dir = mkdtempSync(`${tmpdir()}/mq-cluster-test-`);
  const store = kv ?? await (await pickPlatform()).openKv(`${dir}/kv.sqlite`, {});
  const brokers = new Map<string, Broker>();
  const open = async (i: number): Promise<void> => {
    if (i === names.length) return await run();
    // Each its own pid, so message ids differ across groups as across processes.
    await withBroker(
      { ...env, MQ_BROKER_NAME: names[i] },
      async (b) => {
        brokers.set(names[i], b);
        await open(i + 1);
      },
      undefined,
      i + 1,
    );
  };
  const run = () =>
    f({
      cluster,
      brokers,
      kv: store,
      async register(...which) {
        for (const name of which.length ? which : names) {
          const b = brokers.get(name)!;
          await store.set(
            [...ROUTES_PREFIX, cluster, name],
            encodeRoute({
              cluster,
              brokerName: name,
              address: `${name}.test:1`,
              idPrefix: b.idPrefix,
              epoch: 1,
              topics: b.topicConfigs().map(({ name, readQueueNums, writeQueueNums, perm }) => ({
                name,
                readQueueNums,
                writeQueueNums,
                perm,
              })),
              updatedAtMs: Date.now(),
            }),
          );
        }
      },
      connect(url) {
        const name = [...brokers.keys()].find((n) => urlOf(n) === url);
        if (!name) throw new Error(`no test group at ${url}`);
        return brokers.get(name)!;
      },
      source(o = {}) {
        return new KvClusterRouteSource({
          kv: store,
          cluster,
          connect: (url) => this.connect(url),
          routeExpiryMs: 60_000,
          routeCacheMs: o.routeCacheMs ?? 60_000,
          topicsMax: o.topicsMax,
          nowMs: () => Date.now(),
        });
      },
    });
  try {
    await open(0);
  } finally {
    if (!kv) store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
