// Phase [0] of replication_bench.ts, in process: how fast an empty slave catches up with a
// master holding `mib` MiB of `bodyBytes`-byte messages over loopback, once as an
// ASYNC_FLUSH slave and once as a SYNC_FLUSH one. Baseline in the same run: the same bytes
// through a bare loopback TCP socket (write -> read, no store), so the ratio survives
// machine noise.
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import type { FlushDiskType } from "../../storage/config.ts";
import { testMessage } from "../../storage/testing.ts";
import { ReplicationMaster } from "../../runtime/ha/replication_master.ts";
import { ReplicationSlave } from "../../runtime/ha/replication_slave.ts";
import type { Platform } from "../../runtime/platform/platform.ts";
import { nowMs, openNode, type TestNode } from "../../tests/support/ha/replication_testing.ts";

/** Messages put per await while filling the master. */
const FILL_BATCH = 1000;
/** Bytes per write of the raw TCP baseline. */
const RAW_CHUNK_BYTES = 32 * 1024;
/** How often the bench looks at the slave's offset. */
const POLL_MS = 2;

export interface CatchUpResult {
  /** Bytes the master held (whole messages, so a little over `mib` MiB). */
  bytes: number;
  rawTcpMiBPerS: number;
  asyncSlaveMiBPerS: number;
  syncSlaveMiBPerS: number;
}

export async function catchUpPhase(options: {
  platform: Platform;
  dir: string;
  mib: number;
  bodyBytes: number;
  segmentBytes: number;
}): Promise<CatchUpResult> {
  const config = {
    mappedFileSizeCommitLog: options.segmentBytes,
    maxIndexNum: 4_000_000,
    maxHashSlotNum: 1_000_000,
  };
  const m = await openNode(path.join(options.dir, "master"), config);
  try {
    await fill(m, options.mib * 1024 * 1024, options.bodyBytes);
    const master = new ReplicationMaster({
      store: m.store,
      epochs: m.epochs,
      epoch: 1,
      host: "127.0.0.1",
      port: 0,
      nowMs,
    });
    await master.start();
    try {
      const bytes = m.store.maxPhysicalOffset;
      const rawTcpMiBPerS = await rawTcp(options.platform, bytes);
      const slave = (flush: FlushDiskType, brokerId: number) =>
        catchUp({ dir: options.dir, config, master, m, flush, brokerId });
      const asyncSlaveMiBPerS = await slave("ASYNC_FLUSH", 1);
      const syncSlaveMiBPerS = await slave("SYNC_FLUSH", 2);
      return { bytes, rawTcpMiBPerS, asyncSlaveMiBPerS, syncSlaveMiBPerS };
    } finally {
      await master.stop();
    }
  } finally {
    await m.store.close();
  }
}

async function fill(node: TestNode, targetBytes: number, bodyBytes: number) {
  const body = new Uint8Array(bodyBytes).fill(7);
  let i = 0;
  while (node.store.maxPhysicalOffset < targetBytes) {
    const batch = [];
    for (let k = 0; k < FILL_BATCH; k++, i++) {
      batch.push(node.store.putMessage(testMessage("Bench", i % 8, body, { KEYS: `k${i}` })));
    }
    await Promise.all(batch);
  }
}

async function catchUp(o: {
  dir: string;
  config: Record<string, number>;
  master: ReplicationMaster;
  m: TestNode;
  flush: FlushDiskType;
  brokerId: number;
}): Promise<number> {
  const n = await openNode(fs.mkdtempSync(path.join(o.dir, "slave-")), {
    ...o.config,
    flushDiskType: o.flush,
  });
  const slave = new ReplicationSlave({
    store: n.store,
    epochs: n.epochs,
    brokerId: o.brokerId,
    master: { host: "127.0.0.1", port: o.master.port },
    nowMs,
  });
  const started = performance.now();
  slave.start();
  while (slave.heldOffset < o.m.store.maxPhysicalOffset) {
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const seconds = (performance.now() - started) / 1000;
  await slave.stop();
  await n.store.close();
  return o.m.store.maxPhysicalOffset / 1048576 / seconds;
}

async function rawTcp(platform: Platform, bytes: number): Promise<number> {
  let received = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const server = await platform.listenTcp(
    { hostname: "127.0.0.1", port: 0 },
    (s) =>
      s.on("data", (d: Uint8Array) => {
        received += d.length;
        if (received >= bytes) {
          done();
          s.destroy();
        }
      }),
  );
  const client = net.connect({ host: "127.0.0.1", port: server.port });
  await new Promise((r) => client.once("connect", r));
  const chunk = new Uint8Array(RAW_CHUNK_BYTES);
  const started = performance.now();
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    if (!client.write(chunk)) await new Promise((r) => client.once("drain", r));
  }
  await finished;
  const seconds = (performance.now() - started) / 1000;
  client.destroy();
  await server.close();
  return bytes / 1048576 / seconds;
}
