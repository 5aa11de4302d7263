// Replication throughput, master -> slave over loopback: an empty slave catches up with a
// master holding --mib MiB of 1 KiB messages, once with an ASYNC_FLUSH slave and once with
// a SYNC_FLUSH one. Baseline in the same run: the same bytes through a bare loopback TCP
// socket (write -> read, no store), so the ratio survives machine noise.
//   deno run -A runtime/ha/replication_bench.ts [--mib 256]
//   bun run runtime/ha/replication_bench.ts [--mib 256]
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import type { FlushDiskType } from "../../storage/config.ts";
import { testMessage } from "../../storage/testing.ts";
import { ReplicationMaster } from "./replication_master.ts";
import { ReplicationSlave } from "./replication_slave.ts";
import { nowMs, openNode, type TestNode } from "./replication_testing.ts";

const arg = process.argv.indexOf("--mib");
const MIB_TOTAL = arg > 0 ? Number(process.argv[arg + 1]) : 256;
const BODY = 1024;
const SEGMENT = 64 * 1024 * 1024;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "edgemq-ha-bench-"));
const config = {
  mappedFileSizeCommitLog: SEGMENT,
  maxIndexNum: 4_000_000,
  maxHashSlotNum: 1_000_000,
};

async function fillMaster(node: TestNode) {
  const body = new Uint8Array(BODY).fill(7);
  const target = MIB_TOTAL * 1024 * 1024;
  let i = 0;
  while (node.store.maxPhysicalOffset < target) {
    const batch = [];
    for (let k = 0; k < 1000; k++, i++) {
      batch.push(node.store.putMessage(testMessage("Bench", i % 8, body, { KEYS: `k${i}` })));
    }
    await Promise.all(batch);
  }
}

async function catchUp(master: ReplicationMaster, m: TestNode, flushDiskType: FlushDiskType) {
  const dir = fs.mkdtempSync(path.join(tmp, "slave-"));
  const n = await openNode(dir, { ...config, flushDiskType });
  const slave = new ReplicationSlave({
    store: n.store,
    epochs: n.epochs,
    brokerId: flushDiskType === "SYNC_FLUSH" ? 2 : 1,
    master: { host: "127.0.0.1", port: master.port },
    nowMs,
  });
  const started = performance.now();
  slave.start();
  while (slave.heldOffset < m.store.maxPhysicalOffset) await new Promise((r) => setTimeout(r, 2));
  const seconds = (performance.now() - started) / 1000;
  await slave.stop();
  await n.store.close();
  return m.store.maxPhysicalOffset / 1048576 / seconds;
}

async function rawTcp(bytes: number): Promise<number> {
  let received = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const server = net.createServer((s) =>
    s.on("data", (d: Uint8Array) => {
      received += d.length;
      if (received >= bytes) done();
    })
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const client = net.connect({
    host: "127.0.0.1",
    port: (server.address() as net.AddressInfo).port,
  });
  await new Promise((r) => client.once("connect", r));
  const chunk = new Uint8Array(32 * 1024);
  const started = performance.now();
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    if (!client.write(chunk)) await new Promise((r) => client.once("drain", r));
  }
  await finished;
  const seconds = (performance.now() - started) / 1000;
  client.destroy();
  await new Promise((r) => server.close(r));
  return bytes / 1048576 / seconds;
}

const runtime = "Bun" in globalThis ? "bun" : "deno";
console.log(`replication bench on ${runtime}: ${MIB_TOTAL} MiB of ${BODY} B bodies, 32 KiB chunks`);
const m = await openNode(path.join(tmp, "master"), config);
await fillMaster(m);
const master = new ReplicationMaster({
  store: m.store,
  epochs: m.epochs,
  epoch: 1,
  host: "127.0.0.1",
  port: 0,
  nowMs,
});
await master.start();
const baseline = await rawTcp(m.store.maxPhysicalOffset);
const asyncSlave = await catchUp(master, m, "ASYNC_FLUSH");
const syncSlave = await catchUp(master, m, "SYNC_FLUSH");
console.log(`baseline raw loopback TCP      ${baseline.toFixed(0)} MiB/s`);
console.log(
  `ASYNC_FLUSH slave catch-up     ${asyncSlave.toFixed(0)} MiB/s (${
    (asyncSlave / baseline).toFixed(2)
  } of baseline)`,
);
console.log(
  `SYNC_FLUSH slave catch-up      ${syncSlave.toFixed(0)} MiB/s (${
    (syncSlave / baseline).toFixed(2)
  } of baseline)`,
);
await master.stop();
await m.store.close();
fs.rmSync(tmp, { recursive: true, force: true });
