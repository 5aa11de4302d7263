// MessageStore's replica surface: readCommitLogBytes(), appendReplicated(),
// truncateCommitLogTo() and the truncation marker, on the simulated disk.
import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { readFully } from "../file_port.ts";
import { MessageStore, type PutResult } from "../message_store.ts";
import { seededRandom, smallStoreConfig, storeCore, testMessage } from "../testing.ts";
import type { StoreConfig } from "../config.ts";
import { CorruptRecordError } from "../errors.ts";
import { BLANK_MAGIC } from "../message/record.ts";
import { ReplicaError } from "./replica_errors.ts";
import { readTruncateMarker, writeTruncateMarker } from "./truncate_marker.ts";

const NOW = 1_700_000_000_000;

function newStore(disk: SimDisk, root: string, patch: Partial<StoreConfig> = {}) {
  return new MessageStore({ files: disk, config: smallStoreConfig(root, patch), nowMs: () => NOW });
}

/** Random puts: two topics, three queues, tags, keys, a delayed and a prepared message. */
async function produce(store: MessageStore, n: number, seed: number): Promise<PutResult[]> {
  const random = seededRandom(seed);
  const puts: Promise<PutResult>[] = [];
  for (let i = 0; i < n; i++) {
    const size = random() < 0.1 ? 2000 + Math.floor(random() * 4000) : Math.floor(random() * 600);
    const body = new Uint8Array(size).map(() => Math.floor(random() * 256));
    const topic = random() < 0.5 ? "A" : "B";
    const msg = testMessage(topic, Math.floor(random() * 3), body, {
      TAGS: random() < 0.5 ? "x" : "y",
      KEYS: `k${seed}-${i}`,
    });
    if (i % 17 === 5) msg.sysFlag = 4; // PREPARED: in the CommitLog, not in a ConsumeQueue
    if (i % 23 === 7) {
      msg.topic = "SCHEDULE_TOPIC_XXXX";
      msg.queueId = 2;
      msg.properties!.set("DELAY", "3");
    }
    puts.push(store.putMessage(msg));
    if (random() < 0.3) await Promise.all(puts);
  }
  return Promise.all(puts);
}

/** Copies the master's log into the slave in chunks of `chunkBytes`, as replication does. */
async function copy(master: MessageStore, slave: MessageStore, chunkBytes: number) {
  let from = slave.minPhysicalOffset === slave.maxPhysicalOffset
    ? master.minPhysicalOffset
    : slave.maxPhysicalOffset;
  while (from < master.maxPhysicalOffset) {
    const chunk = master.readCommitLogBytes(from, chunkBytes);
    await slave.appendReplicated(from, chunk.bytes);
    from = chunk.nextOffset;
    assert.equal(slave.maxPhysicalOffset, from);
  }
}

function segmentFiles(store: MessageStore): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const s of storeCore(store).commitLog.segments) {
    out.set(s.file.path.slice(s.file.path.lastIndexOf("/") + 1), readFully(s.file, 0, s.sizeBytes));
  }
  return out;
}

/** Every ConsumeQueue's bounds and units, in queue order. */
export function queueContents(store: MessageStore) {
  return [...storeCore(store).consumeQueues.all()].map((cq) => {
    const units = [];
    // range() stays within one queue file.
    for (let at = cq.minOffset; at < cq.maxOffset;) {
      const part = cq.range(at, cq.maxOffset - at);
      units.push(...part);
      at += part.length;
    }
    return { queue: `${cq.topic}:${cq.queueId}`, min: cq.minOffset, max: cq.maxOffset, units };
  }).sort((a, b) => a.queue < b.queue ? -1 : 1);
}

/** Puts of produce() that have a ConsumeQueue unit (every 17th from 5 is PREPARED). */
const inQueue = (_: PutResult, i: number) => i % 17 !== 5;

for (const flushDiskType of ["SYNC_FLUSH", "ASYNC_FLUSH"] as const) {
  Deno.test(`MessageStore.appendReplicated() rebuilds a byte-identical CommitLog and identical queues (${flushDiskType})`, async () => {
    const disk = new SimDisk();
    const master = newStore(disk, "/m", { flushDiskType });
    const slave = newStore(disk, "/s", { flushDiskType });
    await master.open();
    await slave.open();
    const puts = await produce(master, 300, 1);
    for (const chunkBytes of [1000, 4096, 32768]) {
      await copy(master, slave, chunkBytes);
      await produce(master, 50, chunkBytes);
    }
    await copy(master, slave, 3000);
    assert.ok(master.stats().segments > 10, "segments rolled (BLANKs replicated)");
    assert.deepEqual(segmentFiles(slave), segmentFiles(master));
    await slave.checkpoint();
    assert.ok(queueContents(master).length > 3);
    assert.deepEqual(queueContents(slave), queueContents(master));
    const byKey = slave.queryMessage("A", `k1-${puts.findIndex((p) => p.topic === "A")}`, {
      maxNum: 4,
      beginTimestamp: 0,
      endTimestamp: Number.MAX_SAFE_INTEGER,
    });
    assert.equal(byKey.length, 1, "the slave indexed the keys");
    // Promoted, the slave continues every queue where the master was.
    const next = await slave.putMessage(testMessage("A", 1, new Uint8Array(3)));
    assert.equal(next.queueOffset, master.getMaxOffsetInQueue("A", 1));
    await master.close();
    await slave.close();
    // And it all survives a restart.
    const again = newStore(disk, "/s", { flushDiskType });
    await again.open();
    assert.equal(again.getMaxOffsetInQueue("A", 1), next.queueOffset + 1);
    await again.close();
  });
}

Deno.test("MessageStore.readCommitLogBytes() returns whole records, stops at segment ends with the BLANK", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, "/m");
  await store.open();
  const puts = await produce(store, 120, 2);
  const segmentBytes = storeCore(store).commitLog.segmentBytes;
  let from = 0, chunks = 0, blanks = 0;
  // Record starts, and record ends (the next record or a BLANK).
  const starts = new Set(puts.flatMap((p) => [p.commitLogOffset, p.commitLogOffset + p.size]));
  while (from < store.maxPhysicalOffset) {
    const chunk = store.readCommitLogBytes(from, 1500);
    assert.ok(starts.has(from), "chunks start at records");
    const segmentEnd = from - (from % segmentBytes) + segmentBytes;
    const view = new DataView(chunk.bytes.buffer, chunk.bytes.byteOffset);
    if (chunk.nextOffset === segmentEnd) {
      assert.equal(view.getInt32(chunk.bytes.length - 4), BLANK_MAGIC);
      blanks++;
    } else {
      assert.ok(starts.has(chunk.nextOffset));
      assert.equal(chunk.nextOffset, from + chunk.bytes.length);
      const single = puts.find((p) => p.commitLogOffset === from)!;
      assert.ok(chunk.bytes.length <= 1500 || chunk.bytes.length === single.size);
    }
    assert.ok(chunk.nextOffset <= segmentEnd, "never crosses a segment end");
    from = chunk.nextOffset;
    chunks++;
  }
  assert.ok(blanks > 3 && chunks > blanks);
  // endOffset bounds a chunk (an epoch end).
  const third = puts[2];
  assert.equal(
    store.readCommitLogBytes(0, 1 << 20, third.commitLogOffset).nextOffset,
    third.commitLogOffset,
  );
  assert.equal(store.readCommitLogBytes(store.maxPhysicalOffset, 100).bytes.length, 0);
  assert.throws(
    () => store.readCommitLogBytes(puts[1].commitLogOffset + 1, 100),
    CorruptRecordError,
  );
  assert.throws(
    () => store.readCommitLogBytes(store.maxPhysicalOffset + 1, 100),
    (e: unknown) => e instanceof ReplicaError && e.code === "REPLICA_OFFSET_ILLEGAL",
  );
  await store.close();
});

Deno.test("MessageStore.appendReplicated() refuses a corrupted chunk and keeps only the records before the damage", async () => {
  const disk = new SimDisk();
  const master = newStore(disk, "/m");
  await master.open();
  const puts = await produce(master, 12, 3);
  const end = puts[5].commitLogOffset; // records 0-4 fit in one segment at this seed
  assert.equal(storeCore(master).commitLog.findSegment(end)!.startOffset, 0);
  const chunk = master.readCommitLogBytes(0, end).bytes;
  assert.equal(chunk.length, end);
  const flips: [string, number][] = [
    ["body byte of record 3", puts[3].commitLogOffset + puts[3].size - 30],
    ["PHYSICALOFFSET of record 2", puts[2].commitLogOffset + 30],
    ["TOTALSIZE of record 4", puts[4].commitLogOffset + 2],
  ];
  for (const [name, at] of flips) {
    const slave = newStore(new SimDisk(), "/s");
    await slave.open();
    const bad = chunk.slice();
    bad[at] ^= 0x20;
    const damaged = puts.findLast((p) => p.commitLogOffset <= at)!;
    await assert.rejects(
      slave.appendReplicated(0, bad),
      (e: unknown) =>
        e instanceof ReplicaError && e.code === "REPLICA_RECORD_CORRUPT" &&
        e.offset === damaged.commitLogOffset,
      name,
    );
    assert.equal(slave.maxPhysicalOffset, damaged.commitLogOffset, name);
    await slave.checkpoint();
    const kept = puts.slice(0, puts.indexOf(damaged)).filter(inQueue);
    const inQueues = [...storeCore(slave).consumeQueues.all()].reduce(
      (n, cq) => n + cq.maxOffset,
      0,
    );
    assert.equal(inQueues, kept.length, name);
    // The rest arrives again, whole, and is taken.
    const rest = master.readCommitLogBytes(damaged.commitLogOffset, end - damaged.commitLogOffset);
    await slave.appendReplicated(damaged.commitLogOffset, rest.bytes);
    assert.equal(slave.maxPhysicalOffset, end);
    await slave.close();
  }
  // A chunk cut inside a record keeps the whole records before the cut.
  const slave = newStore(new SimDisk(), "/s");
  await slave.open();
  await assert.rejects(
    slave.appendReplicated(0, chunk.subarray(0, puts[2].commitLogOffset + 50)),
    (e: unknown) => e instanceof ReplicaError && e.code === "REPLICA_RECORD_CORRUPT",
  );
  assert.equal(slave.maxPhysicalOffset, puts[2].commitLogOffset);
  // Another offset than the end is refused and appends nothing.
  await assert.rejects(
    slave.appendReplicated(puts[3].commitLogOffset, chunk.subarray(puts[3].commitLogOffset)),
    (e: unknown) => e instanceof ReplicaError && e.code === "REPLICA_OFFSET_MISMATCH",
  );
  assert.equal(slave.maxPhysicalOffset, puts[2].commitLogOffset);
  await slave.close();
  await master.close();
});

Deno.test("MessageStore.appendReplicated() refuses a record whose queue offset breaks its queue's sequence", async () => {
  const disk = new SimDisk();
  const master = newStore(disk, "/m");
  const other = newStore(disk, "/o");
  const slave = newStore(disk, "/s");
  for (const s of [master, other, slave]) await s.open();
  await master.putMessage(testMessage("A", 0, new Uint8Array(10)));
  await master.putMessage(testMessage("A", 0, new Uint8Array(10)));
  await other.putMessage(testMessage("A", 0, new Uint8Array(10)));
  await copy(master, slave, 1 << 20);
  // `other` wrote queue offset 0 where the slave expects 2; place it at the slave's end.
  const stray = other.readCommitLogBytes(0, 1 << 20).bytes.slice();
  const view = new DataView(stray.buffer);
  view.setUint32(32, slave.maxPhysicalOffset); // PHYSICALOFFSET (low word) where it would land
  await assert.rejects(
    slave.appendReplicated(slave.maxPhysicalOffset, stray),
    (e: unknown) =>
      e instanceof ReplicaError && e.code === "REPLICA_RECORD_CORRUPT" &&
      /breaks the sequence/.test(e.message),
  );
  assert.equal(slave.getMaxOffsetInQueue("A", 0), 2);
  for (const s of [master, other, slave]) await s.close();
});

Deno.test("MessageStore.truncateCommitLogTo() drops the log, queue units and index entries from an offset", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  const puts = await produce(store, 200, 4);
  const cut = puts[120];
  const before = store.stats().segments;
  await store.truncateCommitLogTo(cut.commitLogOffset);
  assert.equal(store.maxPhysicalOffset, cut.commitLogOffset);
  assert.ok(store.stats().segments < before);
  const seg = storeCore(store).commitLog.findSegment(cut.commitLogOffset)!;
  const tail = readFully(
    seg.file,
    cut.commitLogOffset - seg.startOffset,
    seg.endOffset - cut.commitLogOffset,
  );
  assert.ok(tail.every((b) => b === 0), "the cut segment holds zeros after the offset");
  const checkState = (s: MessageStore) => {
    for (const cq of storeCore(s).consumeQueues.all()) {
      const kept = puts.slice(0, 120).filter((p, i) =>
        inQueue(p, i) && p.topic === cq.topic && p.queueId === cq.queueId
      );
      const want = kept.length ? kept.at(-1)!.queueOffset + 1 : cq.minOffset;
      assert.equal(cq.maxOffset, want, `${cq.topic}:${cq.queueId}`);
      assert.ok(cq.maxPhysicOffset <= cut.commitLogOffset);
    }
    for (const [i, want] of [[119, 1], [150, 0]]) {
      const hits = s.queryMessage(puts[i].topic, `k4-${i}`, {
        maxNum: 4,
        beginTimestamp: 0,
        endTimestamp: Number.MAX_SAFE_INTEGER,
      });
      assert.equal(hits.length, want, `key of put ${i}`);
    }
  };
  checkState(store);
  // Queue offsets continue from what the queues hold.
  const cutIndex = 120;
  const sameQueue = puts.slice(cutIndex).findIndex((p, i) => inQueue(p, cutIndex + i));
  const resumed = puts[cutIndex + sameQueue];
  const next = await store.putMessage(
    testMessage(resumed.topic, resumed.queueId, new Uint8Array(5)),
  );
  assert.equal(next.commitLogOffset, cut.commitLogOffset);
  assert.equal(next.queueOffset, resumed.queueOffset, "the first dropped offset of that queue");
  await assert.rejects(
    store.truncateCommitLogTo(next.commitLogOffset + 3),
    (e: unknown) => e instanceof ReplicaError && e.code === "REPLICA_OFFSET_ILLEGAL",
  );
  await store.truncateCommitLogTo(cut.commitLogOffset);
  await store.close();
  const again = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
  await again.open();
  assert.equal(again.maxPhysicalOffset, cut.commitLogOffset);
  checkState(again);
  await again.close();
});

Deno.test("MessageStore.open() finishes a truncation whose marker it finds", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  const puts = await produce(store, 80, 5);
  await store.close();
  // A crash right after the marker became durable: nothing else was cut yet.
  await writeTruncateMarker(disk, "/m", puts[40].commitLogOffset);
  disk.crash({ policy: "drop-unsynced", random: () => 0 });
  const again = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
  const report = await again.open();
  assert.equal(report.finishedTruncation, puts[40].commitLogOffset);
  assert.equal(again.maxPhysicalOffset, puts[40].commitLogOffset);
  assert.equal(readTruncateMarker(disk, "/m"), undefined);
  for (const cq of storeCore(again).consumeQueues.all()) {
    assert.ok(cq.maxPhysicOffset <= puts[40].commitLogOffset);
  }
  await again.close();
});

Deno.test("MessageStore.truncateCommitLogTo() cut short by power loss never serves the dropped tail (200 seeds)", async () => {
  const outcomes = new Set<string>();
  for (let seed = 1; seed <= 200; seed++) {
    const random = seededRandom(seed);
    const disk = new SimDisk();
    const store = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
    await store.open();
    const puts = await produce(store, 60, seed);
    await store.checkpoint();
    const originalMax = store.maxPhysicalOffset;
    const cut = puts[Math.floor(random() * puts.length)];
    const dropped = store.lookMessageByOffset(cut.commitLogOffset)!;
    const truncating = store.truncateCommitLogTo(cut.commitLogOffset).catch(() => {});
    for (let k = Math.floor(random() * 60); k > 0; k--) await Promise.resolve();
    disk.crash({ policy: "torn-tail", random, keepUnsyncedNamesRatio: 0.5 });
    await truncating;
    const again = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
    await again.open();
    const max = again.maxPhysicalOffset;
    try {
      assert.ok(max === cut.commitLogOffset || max === originalMax, `ends at ${max}`);
      outcomes.add(max === originalMax ? "old" : "cut");
      const live = puts.filter((p) => p.commitLogOffset < max);
      for (const p of live) assert.ok(again.lookMessageByOffset(p.commitLogOffset));
      for (const cq of storeCore(again).consumeQueues.all()) {
        assert.ok(cq.maxPhysicOffset <= max);
        const kept = live.filter((p, i) =>
          inQueue(p, i) && p.topic === cq.topic && p.queueId === cq.queueId
        );
        if (kept.length) assert.equal(cq.maxOffset, kept.at(-1)!.queueOffset + 1);
      }
      // Nothing of the dropped tail can come back: a record of the dropped one's size put at
      // the cut ends where the next dropped record began, and recovery must not take that.
      const next = await again.putMessage({
        ...testMessage(dropped.topic, dropped.queueId, dropped.body),
        properties: dropped.properties,
        sysFlag: dropped.sysFlag,
      });
      if (max === cut.commitLogOffset) {
        assert.equal(next.commitLogOffset, cut.commitLogOffset);
        assert.equal(next.size, cut.size);
      }
      await again.close();
      const third = newStore(disk, "/m", { flushDiskType: "SYNC_FLUSH" });
      await third.open();
      assert.equal(third.maxPhysicalOffset, next.commitLogOffset + next.size);
      await third.close();
    } catch (err) {
      throw new Error(`seed ${seed}: ${(err as Error).message}`, { cause: err });
    }
  }
  assert.deepEqual([...outcomes].sort(), ["cut", "old"]);
});
