// Replication under faults, over real loopback TCP: stale epochs on either side, SYNC waits
// that must time out or refuse, a byte flipped in flight, a power cut on a slave.
import assert from "node:assert/strict";
import * as net from "node:net";
import { SimDisk } from "../../storage/sim_disk.ts";
import type { FileHandle, FilePort } from "../../storage/file_port.ts";
import { ReplicaError } from "../../storage/ha/replica_errors.ts";
import { seededRandom } from "../../storage/testing.ts";
import { encodeFrame, type Frame, FrameDecoder, HA_PROTOCOL_VERSION } from "./frames.ts";
import { ReplicationMaster } from "./replication_master.ts";
import { ReplicationSlave } from "./replication_slave.ts";
import { ReplicationError, type ReplicationErrorCode } from "./replication_errors.ts";
import {
  assertSameReplica,
  closeNode,
  FAST,
  FrameProxy,
  nowMs,
  openNode,
  produce,
  type TestNode,
  waitUntil,
  withTempDirs,
} from "../../tests/support/ha/replication_testing.ts";

const LOCAL = "127.0.0.1";

function master(node: TestNode, epoch: number, onDeposed?: (e: number) => void) {
  return new ReplicationMaster({
    store: node.store,
    epochs: node.epochs,
    epoch,
    host: LOCAL,
    port: 0,
    nowMs,
    config: FAST,
    onDeposed,
  });
}

function slave(
  node: TestNode,
  brokerId: number,
  port: number,
  errors: ReplicationError[] = [],
  fenceEpoch?: number,
) {
  return new ReplicationSlave({
    store: node.store,
    epochs: node.epochs,
    brokerId,
    master: { host: LOCAL, port },
    nowMs,
    config: FAST,
    fenceEpoch,
    onError: (e) => errors.push(e),
  });
}

const is = (code: ReplicationErrorCode) => (e: unknown) =>
  e instanceof ReplicationError && e.code === code;

/** A scripted peer on a raw socket: `onFrame` answers each frame it receives. */
async function fakePeer(onFrame: (frame: Frame, send: (f: Frame) => void) => void) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    const decoder = new FrameDecoder();
    socket.on("data", (chunk: Uint8Array) => {
      for (const f of decoder.push(chunk)) onFrame(f, (out) => socket.write(encodeFrame(out)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, LOCAL, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    async close() {
      const closed = [...sockets].map((s) => new Promise((r) => s.once("close", r)));
      for (const s of sockets) s.destroy();
      await Promise.all(closed);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Connects to a master as a scripted slave; resolves with the frames received until close. */
function fakeSlave(port: number, frames: Frame[]): Promise<Frame[]> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: LOCAL, port });
    const got: Frame[] = [];
    const decoder = new FrameDecoder();
    socket.on("error", () => {});
    socket.on("connect", () => {
      for (const f of frames) socket.write(encodeFrame(f));
    });
    socket.on("data", (chunk: Uint8Array) => got.push(...decoder.push(chunk)));
    socket.on("close", () => resolve(got));
  });
}

const handshake = (epoch: number): Frame => ({
  type: "HANDSHAKE",
  epoch,
  version: HA_PROTOCOL_VERSION,
  syncFromLastFile: false,
  brokerId: 9,
  minOffset: 0,
  maxOffset: 0,
  entries: [],
});

Deno.test("Epochs fence: a deposed master and frames of lower epochs are refused on both sides", async (t) => {
  await withTempDirs(2, async ([dm, ds]) => {
    const m = await openNode(dm);
    const n = await openNode(ds);
    await produce(m.store, 50, 1);

    await t.step("a master sees a slave of a higher epoch: it is deposed", async () => {
      const deposed: number[] = [];
      const rm = master(m, 2, (e) => deposed.push(e));
      await rm.start();
      const s = slave(n, 1, rm.port, [], 3);
      s.start();
      await waitUntil(() => deposed.length > 0, "the master to learn it is deposed");
      assert.deepEqual(deposed, [3]);
      assert.equal(rm.deposedBy, 3);
      await assert.rejects(rm.waitForReplicas(100, 2, 1000), is("MASTER_DEPOSED"));
      await s.stop();
      await rm.stop();
      assert.equal(n.store.maxPhysicalOffset, 0, "the fenced slave took nothing");
    });

    await t.step("a master refuses to start below its epoch file's last epoch", async () => {
      await assert.rejects(master(m, 1).start(), is("EPOCH_FENCED"));
    });

    await t.step("a slave refuses a master that replies with a lower epoch", async () => {
      const transfer = m.store.readCommitLogBytes(0, 4096);
      const peer = await fakePeer((f, send) => {
        if (f.type !== "HANDSHAKE") return;
        send({
          type: "HANDSHAKE_REPLY",
          epoch: 2,
          status: "OK",
          masterMinOffset: 0,
          masterMaxOffset: transfer.nextOffset,
          truncateOffset: 0,
          startOffset: 0,
        });
        send({
          type: "TRANSFER",
          epoch: 2,
          offset: 0,
          dataEpoch: 2,
          dataEpochStart: 0,
          confirmOffset: 0,
          body: transfer.bytes,
        });
      });
      const errors: ReplicationError[] = [];
      const s = slave(n, 1, peer.port, errors, 3);
      s.start();
      await waitUntil(() => errors.length > 0, "the slave to refuse");
      await s.stop();
      await peer.close();
      assert.ok(is("EPOCH_FENCED")(errors[0]), errors[0]?.message);
      assert.equal(n.store.maxPhysicalOffset, 0);
    });

    await t.step(
      "a slave refuses a TRANSFER of a lower epoch than its master's reply",
      async () => {
        const transfer = m.store.readCommitLogBytes(0, 4096);
        const peer = await fakePeer((f, send) => {
          if (f.type === "HANDSHAKE") {
            send({
              type: "HANDSHAKE_REPLY",
              epoch: 5,
              status: "OK",
              masterMinOffset: 0,
              masterMaxOffset: transfer.nextOffset,
              truncateOffset: 0,
              startOffset: 0,
            });
          } else if (f.type === "ACK") {
            assert.equal(f.epoch, 5, "the slave adopted the master's epoch");
            send({
              type: "TRANSFER",
              epoch: 4,
              offset: 0,
              dataEpoch: 4,
              dataEpochStart: 0,
              confirmOffset: 0,
              body: transfer.bytes,
            });
          }
        });
        const errors: ReplicationError[] = [];
        const s = slave(n, 1, peer.port, errors);
        s.start();
        await waitUntil(() => errors.length > 0, "the slave to refuse");
        await s.stop();
        await peer.close();
        assert.ok(is("EPOCH_FENCED")(errors[0]), errors[0]?.message);
        assert.equal(s.highestEpoch, 5);
        assert.equal(n.store.maxPhysicalOffset, 0);
      },
    );

    await t.step("a master closes a slave that acknowledges with a lower epoch", async () => {
      const rm = master(m, 3);
      await rm.start();
      const got = await fakeSlave(rm.port, [handshake(1), { type: "ACK", epoch: 1, maxOffset: 0 }]);
      assert.deepEqual(got.map((f) => [f.type, f.epoch]), [["HANDSHAKE_REPLY", 3]]);
      assert.equal(rm.deposedBy, 0);
      await rm.stop();
    });
    await closeNode(m);
    await closeNode(n);
  });
});

Deno.test("ReplicationMaster.waitForReplicas() resolves when enough replicas hold the offset, else refuses or times out", async () => {
  await withTempDirs(3, async ([dm, d1, d2]) => {
    const m = await openNode(dm, { flushDiskType: "SYNC_FLUSH" });
    const n1 = await openNode(d1, { flushDiskType: "SYNC_FLUSH" });
    const n2 = await openNode(d2, { flushDiskType: "SYNC_FLUSH" });
    const rm = master(m, 1);
    await rm.start();
    const proxy = await FrameProxy.start({ host: LOCAL, port: rm.port });
    const s1 = slave(n1, 1, rm.port), s2 = slave(n2, 2, proxy.port);
    s1.start();
    s2.start();
    await waitUntil(() => rm.inSyncSlaveCount() === 2, "two slaves in sync");
    const end = async () => {
      const [p] = await produce(m.store, 1, Math.random() * 1e9);
      return p.commitLogOffset + p.size;
    };
    let offset = await end();
    await rm.waitForReplicas(offset, 1, 0); // the master alone: at once
    await rm.waitForReplicas(offset, 3, 3000);
    assert.ok(rm.replicas().every((r) => r.ackedOffset >= offset));
    assert.ok(n1.store.maxPhysicalOffset >= offset && n2.store.maxPhysicalOffset >= offset);

    // Slave 2 is in sync but its acks are held back: 3 replicas cannot be confirmed in time,
    // 2 can.
    proxy.paused = true;
    offset = await end();
    const started = performance.now();
    await assert.rejects(rm.waitForReplicas(offset, 3, 300), is("FLUSH_SLAVE_TIMEOUT"));
    assert.ok(performance.now() - started >= 290, "not before its time");
    await rm.waitForReplicas(offset, 2, 3000);
    const pending = rm.waitForReplicas(offset, 3, 5000);
    proxy.resume();
    await pending;

    // Slave 2 gone: fewer in-sync slaves than needed is refused at once.
    await s2.stop();
    await waitUntil(() => rm.inSyncSlaveCount() === 1, "slave 2 to leave the in-sync set");
    offset = await end();
    await assert.rejects(rm.waitForReplicas(offset, 3, 3000), is("SLAVE_NOT_AVAILABLE"));
    await rm.waitForReplicas(offset, 2, 3000);
    // Waiters fail when the master stops.
    proxy.paused = true;
    const orphan = rm.waitForReplicas(await end() + 10 ** 9, 2, 60_000).catch((e) => e);
    await s1.stop();
    await rm.stop();
    assert.ok(is("REPLICATION_STOPPED")(await orphan));
    await proxy.close();
    for (const n of [m, n1, n2]) await closeNode(n);
  });
});

/** Where record `at` of a chunk ends, and where its body starts (IPv4 hosts, as produce()). */
function recordAt(body: Uint8Array, at: number) {
  const view = new DataView(body.buffer, body.byteOffset + at);
  return { size: view.getInt32(0), bodyAt: at + 88, bodyLength: view.getInt32(84) };
}

Deno.test("Damage between the master's log and the slave's is refused; the slave keeps only whole good records, then recovers", async (t) => {
  await withTempDirs(3, async ([dm, d1, d2]) => {
    const m = await openNode(dm, { flushDiskType: "SYNC_FLUSH" });
    const puts = await produce(m.store, 400, 5);
    const starts = new Set(puts.map((p) => p.commitLogOffset));
    const rm = master(m, 1);
    await rm.start();
    const proxy = await FrameProxy.start({ host: LOCAL, port: rm.port });

    /** Replicates through the proxy; resolves the slave's errors and its end at the first. */
    const replicate = async (dir: string) => {
      const n = await openNode(dir, { flushDiskType: "SYNC_FLUSH" });
      const errors: ReplicationError[] = [];
      let endAtRefusal = -1;
      const s = new ReplicationSlave({
        store: n.store,
        epochs: n.epochs,
        brokerId: 1,
        master: { host: LOCAL, port: proxy.port },
        nowMs,
        config: FAST,
        onError: (e) => {
          errors.push(e);
          if (endAtRefusal < 0) endAtRefusal = n.store.maxPhysicalOffset;
        },
      });
      s.start();
      await produce(m.store, 50, 6 + errors.length);
      await waitUntil(() => s.heldOffset === m.store.maxPhysicalOffset, "the slave to recover");
      assertSameReplica(m, n);
      await s.stop();
      await closeNode(n);
      return { errors, endAtRefusal };
    };
    const late = (f: Frame) => f.type === "TRANSFER" && f.offset > 100_000 && f.body.length > 4000;

    await t.step(
      "a byte flipped in flight fails the frame CRC: nothing of the chunk is taken",
      async () => {
        let chunkAt = -1;
        proxy.toSlaveBytes = (bytes, f) => {
          if (chunkAt >= 0 || !late(f)) return bytes;
          chunkAt = (f as { offset: number }).offset;
          const damaged = bytes.slice();
          damaged[damaged.length - 5] ^= 0x10; // in the last record's properties
          return damaged;
        };
        const { errors, endAtRefusal } = await replicate(d1);
        proxy.toSlaveBytes = (b) => b;
        assert.ok(chunkAt > 0, "a chunk was damaged");
        assert.equal(errors.length, 1);
        assert.ok(is("PROTOCOL_VIOLATION")(errors[0]), errors[0].message);
        assert.match(String((errors[0].cause as Error).message), /CRC32 does not match/);
        assert.equal(endAtRefusal, chunkAt);
      },
    );

    await t.step(
      "a record damaged before framing fails its body CRC: records before it are kept",
      async () => {
        let damaged = -1;
        proxy.toSlave = (f) => {
          if (damaged >= 0 || !late(f) || f.type !== "TRANSFER") return f;
          // The first record past byte 3000 of the chunk with a body of some length.
          const body = new Uint8Array(f.body);
          let at = 0;
          while (at < 3000 || recordAt(body, at).bodyLength < 8) at += recordAt(body, at).size;
          damaged = f.offset + at;
          body[recordAt(body, at).bodyAt + 3] ^= 0x01;
          return { ...f, body };
        };
        const { errors, endAtRefusal } = await replicate(d2);
        proxy.toSlave = (f) => f;
        assert.ok(starts.has(damaged), "a record was damaged");
        assert.equal(errors.length, 1);
        assert.ok(is("REPLICA_APPLY_FAILED")(errors[0]), errors[0].message);
        const cause = errors[0].cause as ReplicaError;
        assert.ok(cause instanceof ReplicaError && cause.code === "REPLICA_RECORD_CORRUPT");
        assert.equal(cause.offset, damaged);
        assert.equal(endAtRefusal, damaged, "nothing beyond the last good record was appended");
      },
    );
    await rm.stop();
    await proxy.close();
    await closeNode(m);
  });
});

Deno.test("A SYNC_FLUSH slave cut off by power loss keeps everything it acknowledged, then resumes", async () => {
  await withTempDirs(1, async ([dm]) => {
    const m = await openNode(dm, { flushDiskType: "SYNC_FLUSH" });
    const rm = master(m, 1);
    await rm.start();
    const disk = new SimDisk();
    for (let seed = 1; seed <= 5; seed++) {
      const random = seededRandom(seed);
      let n = await openNode("/slave", { flushDiskType: "SYNC_FLUSH" }, disk);
      const s = slave(n, 1, rm.port);
      s.start();
      const producing = produce(m.store, 200, 100 + seed);
      await waitUntil(() => s.heldOffset > m.store.maxPhysicalOffset - 50_000, "progress");
      for (let k = Math.floor(random() * 20); k > 0; k--) await Promise.resolve();
      const acked = rm.replicas().find((r) => r.brokerId === 1)?.ackedOffset ?? 0;
      disk.crash({ policy: "torn-tail", random, keepUnsyncedNamesRatio: 0.5 });
      await s.stop();
      await producing;
      n = await openNode("/slave", { flushDiskType: "SYNC_FLUSH" }, disk);
      assert.ok(n.store.maxPhysicalOffset >= acked, `seed ${seed}: acked ${acked} survived`);
      const again = slave(n, 1, rm.port);
      again.start();
      await waitUntil(() => again.heldOffset === m.store.maxPhysicalOffset, "resume");
      assertSameReplica(m, n);
      await again.stop();
      await closeNode(n);
    }
    await rm.stop();
    await closeNode(m);
  });
});

/** The simulated disk, with every fdatasync held until `gate` resolves. */
class GatedSyncDisk implements FilePort {
  gate: Promise<void> = Promise.resolve();
  constructor(readonly disk: SimDisk) {}
  open(path: string, options?: { create?: boolean }): FileHandle {
    const h = this.disk.open(path, options);
    return {
      path: h.path,
      readAt: (b, o, l, p) => h.readAt(b, o, l, p),
      writeAt: (b, p) => h.writeAt(b, p),
      writeAtAsync: (b, p) => h.writeAtAsync(b, p),
      datasync: () => this.gate.then(() => h.datasync()),
      truncate: (l) => h.truncate(l),
      size: () => h.size(),
      close: () => h.close(),
    };
  }
  exists = (path: string) => this.disk.exists(path);
  list = (dir: string) => this.disk.list(dir);
  mkdirp = (dir: string) => this.disk.mkdirp(dir);
  remove = (path: string) => this.disk.remove(path);
  removeTree = (dir: string) => this.disk.removeTree(dir);
  rename = (from: string, to: string) => this.disk.rename(from, to);
  syncDir = (dir: string) => this.disk.syncDir(dir);
  modifiedMs = (path: string) => this.disk.modifiedMs(path);
}

Deno.test("A SYNC_FLUSH slave acknowledges only what fdatasync made durable", async () => {
  await withTempDirs(1, async ([dm]) => {
    const m = await openNode(dm, { flushDiskType: "SYNC_FLUSH" });
    const rm = master(m, 1);
    await rm.start();
    const disk = new SimDisk();
    const gated = new GatedSyncDisk(disk);
    let n = await openNode("/slave", { flushDiskType: "SYNC_FLUSH" }, gated);
    const s = slave(n, 1, rm.port);
    s.start();
    await produce(m.store, 100, 1);
    await waitUntil(() => s.heldOffset === m.store.maxPhysicalOffset, "catch-up");
    // Syncs hang: the slave writes what arrives but cannot make it durable.
    let open!: () => void;
    gated.gate = new Promise((resolve) => (open = resolve));
    await produce(m.store, 100, 2);
    await waitUntil(() => n.store.maxPhysicalOffset === m.store.maxPhysicalOffset, "writes");
    await new Promise((resolve) => setTimeout(resolve, 4 * (FAST.haSendHeartbeatInterval ?? 0)));
    const acked = rm.replicas()[0].ackedOffset;
    assert.ok(acked < n.store.maxPhysicalOffset, "written but unsynced bytes are not acknowledged");
    disk.crash({ policy: "drop-unsynced", random: () => 0 });
    open();
    await s.stop();
    n = await openNode("/slave", { flushDiskType: "SYNC_FLUSH" }, disk);
    assert.ok(n.store.maxPhysicalOffset >= acked, "everything acknowledged survived");
    await closeNode(n);
    await rm.stop();
    await closeNode(m);
  });
});
