// A replica's replication (HA) port, auto-picked at start (haPort 0) and published with its
// address, is bound by the replication listener only while the replica is master. While it
// is a slave the port stays held by a placeholder listener: another process that binds
// a port (port 0 picks from the same ephemeral range) must not get it, or the replica's
// promotion fails to listen (EADDRINUSE) and the process exits. Real processes, Deno and
// Bun: the test itself plays the other process; the master pauses (SIGSTOP) past its lease,
// the slave takes over, and the old master, woken, holds its port again as a slave.
import assert from "node:assert/strict";
import process from "node:process";
import { createServer, type Server } from "node:net";
import { parseNodeAddress } from "../runtime/ha/node_address.ts";
import { KvLeaseStore } from "../runtime/ha/lease_store.ts";
import { pickPlatform } from "../runtime/platform/pick.ts";
import { Cluster, KV_TOKEN, tail } from "./harness/cluster.ts";
import { RUNTIMES } from "./harness/process.ts";

const ENV = {
  MQ_LEASE_TTL_MS: "1500",
  MQ_LEASE_MARGIN_MS: "300",
  MQ_REPLICATION_MODE: "ASYNC",
  MQ_HA_HEARTBEAT_MS: "200",
  MQ_SEGMENT_BYTES: String(4 * 1024 * 1024),
};
const GROUP = "broker-a"; // brokerName's default
const platform = await pickPlatform();
// Deno.openKv takes the KV Connect token from the environment only.
process.env.DENO_KV_ACCESS_TOKEN = KV_TOKEN;

/** A listener on 127.0.0.1:port, or undefined when the port is taken. */
function tryListen(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer((s) => s.destroy());
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

/** Fails unless 127.0.0.1:port is taken (by the replica that should hold or listen on it). */
async function assertTaken(port: number, message: string) {
  const server = await tryListen(port);
  server?.close();
  assert.equal(server, undefined, message);
}

/** The HA port replica `id` published with its address. */
async function publishedHaPort(kvUrl: string, id: number): Promise<number> {
  const kv = await platform.openKv(kvUrl, { accessToken: KV_TOKEN });
  try {
    const states = await new KvLeaseStore(kv).readReplicas(GROUP);
    const address = states.find((s) => s.brokerId === id)?.address;
    const port = address ? parseNodeAddress(address)?.ha.port : undefined;
    assert.ok(port, `replica ${id} published no HA address: ${JSON.stringify(states)}`);
    return port;
  } finally {
    kv.close();
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`HA on ${runtime}: a slave's replication port stays held until it takes over`, async () => {
    await using cluster = new Cluster(runtime, 2, ENV);
    await cluster.startKv();
    await Promise.all([0, 1].map((i) => cluster.start(i)));
    const master = await cluster.waitForMaster(1);
    const slave = 1 - master;
    const [masterPort, slavePort] = [
      await publishedHaPort(cluster.kvUrl, master),
      await publishedHaPort(cluster.kvUrl, slave),
    ];
    // Another process binding the slave's port now: refused, the slave holds it.
    const intruder = await tryListen(slavePort);
    try {
      assert.equal(intruder, undefined, `another process took the slave's HA port ${slavePort}`);
      // The master pauses past its lease: the slave takes over, listening on its own port.
      cluster.replicas[master].proc!.child.kill("SIGSTOP");
      assert.equal(await cluster.waitForMaster(0, 20_000, master), slave);
      await assertTaken(slavePort, "the new master does not listen on its HA port");
      const sent = await cluster.replicas[slave].proc!.client.produce("HoldT", { body: "after" });
      assert.ok(sent.messageId);
      // The old master wakes up, steps down to slave and holds its port again.
      cluster.replicas[master].proc!.child.kill("SIGCONT");
      assert.equal(await cluster.waitForMaster(1, 20_000), slave);
      await assertTaken(masterPort, `the stepped-down master's HA port ${masterPort} is free`);
    } catch (err) {
      const logs = cluster.replicas.map((r) => `--- ${r.id}\n${tail(r.proc)}`).join("\n");
      throw new Error(`${(err as Error).message}\n${logs}`);
    } finally {
      intruder?.close();
    }
  });
}
