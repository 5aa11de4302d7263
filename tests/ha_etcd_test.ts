// A replicated broker group coordinated through etcd v3 (MQ_KV=etcd://…), real processes
// on Deno and on Bun: the lease record and the route entry live in etcd, a functions process
// finds the master through etcd's route table, SIGKILL of the master hands the lease to the
// slave at epoch + 1, and produce through the functions works on it after.
// Skips, saying why, when etcd is not installed.
import assert from "node:assert/strict";
import { openEtcdKv } from "../runtime/platform/etcd_port.ts";
import { decodeLeaseRecord, LEASE_PREFIX, type LeaseRecord } from "../runtime/ha/lease_store.ts";
import { readRoutes, type RouteEntry } from "../runtime/protocol/routes.ts";
import { Cluster, tail } from "./harness/cluster.ts";
import { ETCD_SKIP_REASON } from "./harness/etcd.ts";
import { RUNTIMES } from "./harness/process.ts";
import { startFunctions } from "./harness/broker.ts";

const ENV = {
  MQ_LEASE_TTL_MS: "1500",
  MQ_LEASE_MARGIN_MS: "300",
  MQ_REPLICATION_MODE: "ASYNC",
  MQ_HA_HEARTBEAT_MS: "200",
  MQ_HA_METADATA_SYNC_MS: "300",
  MQ_ROUTE_HEARTBEAT_MS: "300",
  MQ_SEGMENT_BYTES: String(4 * 1024 * 1024),
};
const TOPIC = "EtcdT";
const GROUP = "broker-a"; // brokerName's default
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `read()` returns something `ok` accepts. */
async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean) {
  let last: T | undefined;
  const deadline = performance.now() + 20_000;
  while (performance.now() < deadline) {
    last = await read().catch(() => undefined);
    if (last !== undefined && ok(last)) return last;
    await sleep(100);
  }
  throw new Error(`${what}: last ${JSON.stringify(last)}`);
}

if (ETCD_SKIP_REASON) console.log(`HA over etcd: skipped: ${ETCD_SKIP_REASON}`);
for (const runtime of RUNTIMES) {
  Deno.test({
    name:
      `HA over etcd on ${runtime}: lease and routes in etcd, SIGKILL of the master, the slave takes over, produce works`,
    ignore: ETCD_SKIP_REASON !== undefined,
    async fn() {
      await using cluster = new Cluster(runtime, 2, ENV);
      await cluster.startEtcd();
      const etcd = await openEtcdKv(cluster.kvUrl); // the test's own view of the store
      const lease = async (): Promise<LeaseRecord> => {
        const e = await etcd.get([...LEASE_PREFIX, GROUP]);
        if (e === null) throw new Error("no lease record");
        return decodeLeaseRecord(e.value);
      };
      const route = async (): Promise<RouteEntry | undefined> =>
        (await readRoutes(etcd, Date.now(), 120_000)).find((r) => r.brokerName === GROUP);
      try {
        await Promise.all([0, 1].map((i) => cluster.start(i)));
        const first = await cluster.waitForMaster(1);
        const slave = 1 - first;
        const held = await lease();
        assert.equal(held.owner, first, "the master holds the lease record in etcd");
        await until("the master's route in etcd", route, (r) => r?.epoch === held.epoch);

        await using functions = await startFunctions(runtime, {
          kvUrl: cluster.kvUrl,
          kvToken: "",
        });
        await functions.client.upsertTopic(TOPIC, { readQueueNums: 1, writeQueueNums: 1 });
        await functions.client.produce(TOPIC, { body: "before", queueId: 0 });
        const masterOffset = (await cluster.status(first))!.maxOffset;
        await until(
          "the slave caught up",
          () => cluster.status(slave),
          (s) => s?.maxOffset === masterOffset,
        );

        await cluster.kill(first); // SIGKILL: no release, the lease must expire in etcd
        const killedAt = performance.now();
        assert.equal(await cluster.waitForMaster(0, 20_000, first), slave);
        const takeoverMs = performance.now() - killedAt;
        const next = await lease();
        assert.equal(next.owner, slave);
        assert.equal(next.epoch, held.epoch + 1, "the new holder counts from the old epoch");
        await until("the new master's route in etcd", route, (r) => r?.epoch === next.epoch);

        const newMaster = cluster.replicas[slave].proc!.client;
        await until(
          "produce on the new master",
          () => newMaster.produce(TOPIC, { body: "after", queueId: 0 }),
          () => true,
        );
        const got = await newMaster.pull(TOPIC, 0, { offset: 0 });
        assert.deepEqual(got.messages.map((m) => m.body), ["before", "after"]);
        console.log(`${runtime}: takeover through etcd in ${takeoverMs.toFixed(0)} ms`);
      } catch (err) {
        const logs = cluster.replicas.map((r) => `--- ${r.id}\n${tail(r.proc)}`).join("\n");
        throw new Error(`${(err as Error).message}\n${logs}`);
      } finally {
        etcd.close();
      }
    },
  });
}
