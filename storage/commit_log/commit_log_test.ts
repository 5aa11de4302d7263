import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { CommitLog } from "./commit_log.ts";
import { GroupCommit } from "./group_commit.ts";
import { BLANK_MAGIC, type MessageInput, prepareRecord } from "../message/record.ts";
import { StoreError } from "../errors.ts";
import { seededRandom } from "../testing.ts";
import { TailCache } from "./tail_cache.ts";

const host = { ip: new Uint8Array([127, 0, 0, 1]), port: 1 };
const message = (bodyBytes: number, topic = "T"): MessageInput => ({
  topic,
  queueId: 0,
  body: new Uint8Array(bodyBytes).fill(7),
  bornTimestamp: 1,
  bornHost: host,
  storeHost: host,
});

function newLog(disk: SimDisk, segmentBytes = 4096, tailCacheBytes = 0) {
  disk.mkdirp("/s/commitlog");
  const log = new CommitLog({
    files: disk,
    dir: "/s/commitlog",
    segmentBytes,
    writeBatchBytesMax: 1 << 20,
    zeroFill: false,
    tailCacheBytes,
  });
  log.load();
  return log;
}

Deno.test("CommitLog.append() writes BLANK and rolls when the record does not fit", async () => {
  const disk = new SimDisk();
  const log = newLog(disk);
  // 91 + 1 (topic) + 1000 = 1092 bytes; three fit in 4096 (3276), a fourth needs 4368 + 8.
  const positions = [];
  for (let i = 0; i < 4; i++) {
    positions.push(log.append(prepareRecord(message(1000), 1 << 20), i, 5));
  }
  log.writePending();
  assert.deepEqual(positions.map((p) => p.physicalOffset), [0, 1092, 2184, 4096]);
  assert.deepEqual(disk.list("/s/commitlog").slice(0, 2), [
    "00000000000000000000",
    "00000000000000004096",
  ]);
  const blank = log.read(3276, 8)!;
  const view = new DataView(blank.buffer, blank.byteOffset);
  assert.equal(view.getInt32(0), 4096 - 3276);
  assert.equal(view.getInt32(4), BLANK_MAGIC);
  const parsed = log.readRecord(4096, 1092);
  assert.equal(parsed.kind, "record");
  if (parsed.kind === "record") assert.equal(parsed.record.queueOffset, 3);
  assert.equal(log.wroteOffset, 4096 + 1092);
  await log.close();
});

Deno.test("CommitLog.append() gathers a tick's records into one write", async () => {
  const disk = new SimDisk();
  const log = newLog(disk, 1 << 20);
  const before = disk.stats.writes;
  for (let i = 0; i < 50; i++) log.append(prepareRecord(message(100), 1 << 20), i, 1);
  assert.equal(log.wroteOffset, 0, "nothing is visible before the write");
  log.writePending();
  assert.equal(disk.stats.writes - before, 1);
  assert.equal(log.wroteOffset, 50 * 192);
  await log.close();
});

Deno.test("CommitLog.append() grows its write buffer within a tick, keeping what is pending", async () => {
  const disk = new SimDisk();
  const log = newLog(disk, 1 << 20);
  // 300 records of 1,092 bytes: ~320 KiB, past the write buffer's first 64 KiB twice over.
  for (let i = 0; i < 300; i++) {
    const m = message(1000);
    m.body.fill(i & 0xff);
    log.append(prepareRecord(m, 1 << 20), i, 1);
  }
  const before = disk.stats.writes;
  log.writePending();
  assert.equal(disk.stats.writes - before, 1, "still one write");
  for (const i of [0, 59, 60, 61, 120, 299]) {
    const parsed = log.readRecord(i * 1092, 1092);
    assert.equal(parsed.kind, "record", `record ${i}`);
    if (parsed.kind === "record") {
      assert.equal(parsed.record.queueOffset, i);
      assert.ok(parsed.record.body.every((b) => b === (i & 0xff)), `body of record ${i}`);
    }
  }
  await log.close();
});

Deno.test("GroupCommit.waitFlushed() shares one fdatasync between concurrent appenders", async () => {
  const disk = new SimDisk();
  const log = newLog(disk, 1 << 20);
  const group = new GroupCommit(log, { syncFlushTimeoutMs: 5000 });
  const waits: Promise<void>[] = [];
  for (let i = 0; i < 100; i++) {
    const p = log.append(prepareRecord(message(10), 1 << 20), i, 1);
    waits.push(Promise.resolve().then(() => group.waitFlushed(p.physicalOffset + p.size)));
  }
  log.writePending();
  const syncsBefore = disk.stats.datasyncs;
  await Promise.all(waits);
  assert.ok(
    disk.stats.datasyncs - syncsBefore <= 2,
    `expected 1-2 syncs, got ${disk.stats.datasyncs - syncsBefore}`,
  );
  assert.equal(group.flushedOffset, log.wroteOffset);
  await log.close();
});

Deno.test("GroupCommit refuses every later flush after one failed fdatasync", async () => {
  const disk = new SimDisk();
  const log = newLog(disk, 1 << 20);
  const group = new GroupCommit(log, { syncFlushTimeoutMs: 5000 });
  const p = log.append(prepareRecord(message(10), 1 << 20), 0, 1);
  log.writePending();
  disk.failDatasync("/s/commitlog/00000000000000000000");
  await assert.rejects(
    group.waitFlushed(p.physicalOffset + p.size),
    (e: unknown) => e instanceof StoreError && e.code === "STORE_NOT_WRITABLE",
  );
  // The data was never made durable, and no later sync may claim it was.
  const q = log.append(prepareRecord(message(10), 1 << 20), 1, 1);
  log.writePending();
  await assert.rejects(
    group.waitFlushed(q.physicalOffset + q.size),
    (e: unknown) => e instanceof StoreError && e.code === "STORE_NOT_WRITABLE",
  );
  assert.equal(group.flushedOffset, 0);
  await log.close();
});

Deno.test("CommitLog pre-writes the next segment with zeros and renames it into place", async () => {
  const disk = new SimDisk();
  disk.mkdirp("/s/commitlog");
  const log = new CommitLog({
    files: disk,
    dir: "/s/commitlog",
    segmentBytes: 4096,
    writeBatchBytesMax: 1 << 20,
    zeroFill: true,
    tailCacheBytes: 0,
  });
  log.load();
  log.append(prepareRecord(message(1000), 1 << 20), 0, 5);
  log.writePending();
  await log.nextSegmentSettled;
  // Written, synced and renamed: durable at full length, no temporary file left.
  assert.deepEqual(disk.list("/s/commitlog"), ["00000000000000000000", "00000000000000004096"]);
  assert.equal(disk.durableBytes("/s/commitlog/00000000000000004096")!.length, 4096);
  for (let i = 1; i < 4; i++) log.append(prepareRecord(message(1000), 1 << 20), i, 5);
  log.writePending();
  assert.equal(log.segments.length, 2);
  const parsed = log.readRecord(4096, 1092);
  assert.equal(parsed.kind, "record");
  await log.close();
});

Deno.test("CommitLog abandons an unfinished preparation instead of writing where zeros may land", async () => {
  const disk = new SimDisk();
  disk.mkdirp("/s/commitlog");
  const log = new CommitLog({
    files: disk,
    dir: "/s/commitlog",
    segmentBytes: 4096,
    writeBatchBytesMax: 1 << 20,
    zeroFill: true,
    tailCacheBytes: 0,
  });
  log.load();
  // Roll twice in one tick: the preparation of segment 4096 cannot have finished.
  for (let i = 0; i < 4; i++) log.append(prepareRecord(message(1000), 1 << 20), i, 5);
  log.writePending();
  await log.close();
  assert.ok(!disk.list("/s/commitlog").some((n) => n.endsWith(".prealloc")));
  const again = new CommitLog({
    files: disk,
    dir: "/s/commitlog",
    segmentBytes: 4096,
    writeBatchBytesMax: 1 << 20,
    zeroFill: false,
    tailCacheBytes: 0,
  });
  again.load();
  again.setEnd(4096 + 1092);
  const parsed = again.readRecord(4096, 1092);
  assert.equal(parsed.kind, "record");
  await again.close();
});

Deno.test("CommitLog serves its newest bytes from the tail cache, the same bytes as the disk", async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const random = seededRandom(seed);
    const cachedDisk = new SimDisk(), plainDisk = new SimDisk();
    // A ring smaller than a segment and not a divisor of it: wraps mid-record.
    const cached = newLog(cachedDisk, 8192, 3001);
    const plain = newLog(plainDisk, 8192, 0);
    const records: { offset: number; size: number }[] = [];
    for (let i = 0; i < 60; i++) {
      const input = message(Math.floor(random() * 900));
      input.body = input.body.map(() => Math.floor(random() * 256));
      const at = cached.append(prepareRecord(input, 1 << 20), i, 1000 + i);
      assert.deepEqual(plain.append(prepareRecord(input, 1 << 20), i, 1000 + i), at);
      records.push({ offset: at.physicalOffset, size: at.size });
      if (random() < 0.4) continue; // several records in one write
      cached.writePending();
      plain.writePending();
      for (const { offset, size } of records) {
        const a = cached.readRecord(offset, size), b = plain.readRecord(offset, size);
        assert.equal(a.kind, "record", `seed ${seed} record at ${offset}`);
        assert.deepEqual(a, b, `seed ${seed} record at ${offset}`);
        assert.deepEqual(cached.read(offset, size), plain.read(offset, size));
      }
      // The newest record never touches the disk.
      const last = records.at(-1)!;
      const reads = cachedDisk.stats.reads;
      cached.readRecord(last.offset, last.size);
      assert.equal(cachedDisk.stats.reads, reads, `seed ${seed}: newest record read from disk`);
    }
    await cached.close();
    await plain.close();
  }
});

Deno.test("TailCache holds the last capacity bytes of a run and restarts at a jump", () => {
  const cache = new TailCache(10);
  const read = (c: TailCache, offset: number, size: number) => {
    const out = new Uint8Array(size);
    return c.readInto(offset, out) ? out : undefined;
  };
  const bytes = (from: number, n: number) => Uint8Array.from({ length: n }, (_, i) => from + i);
  cache.append(100, bytes(0, 6));
  assert.deepEqual(read(cache, 101, 4), bytes(1, 4));
  cache.append(106, bytes(6, 7)); // wraps; holds log bytes [103, 113)
  assert.deepEqual([cache.start, cache.end], [103, 113]);
  assert.equal(read(cache, 102, 2), undefined, "overwritten");
  assert.deepEqual(read(cache, 103, 10), bytes(3, 10));
  assert.equal(read(cache, 110, 4), undefined, "beyond the end");
  cache.append(200, bytes(50, 25)); // a jump, and more than the ring
  assert.deepEqual([cache.start, cache.end], [215, 225]);
  assert.deepEqual(read(cache, 215, 10), bytes(65, 10));
  cache.reset(300);
  assert.equal(read(cache, 215, 1), undefined);
  assert.equal(read(new TailCache(0), 0, 0), undefined);
});
