// Replication over real loopback TCP between MessageStores in temp folders: streaming to
// several slaves, a slave restarting mid-stream, a returning old master truncated to the
// consistent point.
import assert from "node:assert/strict";
import { ReplicationMaster } from "./replication_master.ts";
import { ReplicationSlave } from "./replication_slave.ts";
import type { ReplicationError } from "./replication_errors.ts";
import {
  assertSameReplica,
  closeNode,
  FAST,
  nowMs,
  openNode,
  produce,
  type TestNode,
  waitUntil,
  withTempDirs,
} from "../../tests/support/ha/replication_testing.ts";

function master(node: TestNode, epoch: number) {
  return new ReplicationMaster({
    store: node.store,
    epochs: node.epochs,
    epoch,
    host: "127.0.0.1",
    port: 0,
    nowMs,
    config: FAST,
  });
}

function slave(node: TestNode, brokerId: number, port: number, errors: ReplicationError[] = []) {
  return new ReplicationSlave({
    store: node.store,
    epochs: node.epochs,
    brokerId,
    master: { host: "127.0.0.1", port },
    nowMs,
    config: FAST,
    onError: (e) => errors.push(e),
  });
}

const caughtUp = (m: TestNode, s: ReplicationSlave) => () =>
  s.heldOffset === m.store.maxPhysicalOffset && s.state === "TRANSFER";

Deno.test("ReplicationMaster streams to two slaves: byte-identical CommitLogs, identical queues and epochs", async () => {
  await withTempDirs(3, async ([dm, d1, d2]) => {
    const m = await openNode(dm, { flushDiskType: "SYNC_FLUSH" });
    const n1 = await openNode(d1, { flushDiskType: "SYNC_FLUSH" });
    const n2 = await openNode(d2, { flushDiskType: "ASYNC_FLUSH" });
    await produce(m.store, 300, 1, { bigEvery: 50 }); // before the master starts: catch-up
    const rm = master(m, 1);
    await rm.start();
    const errors: ReplicationError[] = [];
    const s1 = slave(n1, 1, rm.port, errors), s2 = slave(n2, 2, rm.port, errors);
    s1.start();
    s2.start();
    // No slave in sync yet: a SYNC write cannot be confirmed, and says so at once.
    const early = await produce(m.store, 1, 9);
    await assert.rejects(
      rm.waitForReplicas(early[0].commitLogOffset + early[0].size, 3, 5000),
      (e: unknown) => (e as ReplicationError).code === "SLAVE_NOT_AVAILABLE",
    );
    await waitUntil(() => rm.inSyncSlaveCount() === 2, "both slaves in sync");
    // Produce while they stream; each round waits for all three replicas.
    for (let round = 0; round < 8; round++) {
      const puts = await produce(m.store, 250, 10 + round, { bigEvery: 97 });
      const last = puts.at(-1)!;
      await rm.waitForReplicas(last.commitLogOffset + last.size, 3, 5000);
    }
    await waitUntil(caughtUp(m, s1), "slave 1 to catch up");
    await waitUntil(caughtUp(m, s2), "slave 2 to catch up");
    assert.ok(m.store.stats().segments > 20, "many segments rolled");
    assertSameReplica(m, n1);
    assertSameReplica(m, n2);
    assert.deepEqual(m.epochs.entries, [{ epoch: 1, startOffset: 0 }]);
    assert.deepEqual(rm.replicas().map((r) => [r.brokerId, r.inSync]).sort(), [[1, true], [
      2,
      true,
    ]]);
    assert.deepEqual(errors, []);
    await s1.stop();
    await s2.stop();
    await rm.stop();
    for (const n of [m, n1, n2]) await closeNode(n);
  });
});

Deno.test("ReplicationSlave restarted mid-stream resumes where its store ends", async () => {
  await withTempDirs(2, async ([dm, ds]) => {
    const m = await openNode(dm, { flushDiskType: "SYNC_FLUSH" });
    let n = await openNode(ds, { flushDiskType: "SYNC_FLUSH" });
    const rm = master(m, 1);
    await rm.start();
    let s = slave(n, 1, rm.port);
    s.start();
    const producing = (async () => {
      for (let round = 0; round < 10; round++) await produce(m.store, 150, 40 + round);
    })();
    for (let restart = 0; restart < 3; restart++) {
      // Stop somewhere in the stream: after the slave has some, before it has all.
      await waitUntil(() => s.heldOffset > (restart + 1) * 100_000, `slave progress ${restart}`);
      await s.stop();
      const held = n.store.maxPhysicalOffset;
      await closeNode(n);
      n = await openNode(ds, { flushDiskType: "SYNC_FLUSH" });
      assert.ok(n.store.maxPhysicalOffset >= held, "what the slave held survived its restart");
      s = slave(n, 1, rm.port);
      s.start();
    }
    await producing;
    await waitUntil(caughtUp(m, s), "the restarted slave to catch up");
    assertSameReplica(m, n);
    await s.stop();
    await rm.stop();
    await closeNode(m);
    await closeNode(n);
  });
});

Deno.test("A returning old master with a divergent tail is truncated to the consistent point and then matches", async () => {
  await withTempDirs(4, async ([da, db, dc, dd]) => {
    const a = await openNode(da, { flushDiskType: "SYNC_FLUSH" });
    const b = await openNode(db, { flushDiskType: "SYNC_FLUSH" });
    const c = await openNode(dc, { flushDiskType: "ASYNC_FLUSH" });
    // Epoch 1: A is master, B and C follow.
    const ra = master(a, 1);
    await ra.start();
    const sb = slave(b, 2, ra.port), sc = slave(c, 3, ra.port);
    sb.start();
    sc.start();
    await produce(a.store, 400, 1);
    await waitUntil(caughtUp(a, sb), "B to catch up in epoch 1");
    await waitUntil(caughtUp(a, sc), "C to catch up in epoch 1");
    // B is cut off; A and C go on a little (A's tail that B never gets); then A dies.
    await sb.stop();
    const tail = await produce(a.store, 120, 2, { keyPrefix: "tail" });
    await waitUntil(caughtUp(a, sc), "C to copy A's tail");
    const forkAt = b.store.maxPhysicalOffset;
    assert.ok(a.store.maxPhysicalOffset > forkAt);
    await sc.stop();
    await ra.stop();
    // Epoch 2: B is elected (the lease bumps the epoch) and writes its own history.
    const rb = master(b, 2);
    await rb.start();
    assert.deepEqual(b.epochs.entries, [{ epoch: 1, startOffset: 0 }, {
      epoch: 2,
      startOffset: forkAt,
    }]);
    await produce(b.store, 200, 3, { keyPrefix: "new" });
    // A returns as a slave of B, and so does C; both hold epoch 1 data past B's fork. D is
    // new: it copies both epochs, in chunks that stop at the fork.
    const errors: ReplicationError[] = [];
    const d = await openNode(dd, { flushDiskType: "ASYNC_FLUSH" });
    const sa = slave(a, 1, rb.port, errors), sc2 = slave(c, 3, rb.port, errors);
    const sd = slave(d, 4, rb.port, errors);
    sa.fence(2);
    sa.start();
    sc2.start();
    sd.start();
    await produce(b.store, 100, 4, { keyPrefix: "new" });
    await waitUntil(caughtUp(b, sa), "A to match B");
    await waitUntil(caughtUp(b, sc2), "C to match B");
    await waitUntil(caughtUp(b, sd), "D to match B");
    assertSameReplica(b, a);
    assertSameReplica(b, c);
    assertSameReplica(b, d);
    assert.deepEqual(errors, []);
    // Nothing of A's dropped tail is found any more, by key or by offset.
    const lost = a.store.queryMessage(tail[0].topic, "tail2-0", {
      maxNum: 4,
      beginTimestamp: 0,
      endTimestamp: Number.MAX_SAFE_INTEGER,
    });
    assert.equal(lost.length, 0);
    await sa.stop();
    await sc2.stop();
    await sd.stop();
    await rb.stop();
    for (const n of [a, b, c, d]) await closeNode(n);
  });
});
