import assert from "node:assert/strict";
import { SimDisk } from "./sim_disk.ts";
import { MessageStore, type PutResult } from "./message_store.ts";
import { seededRandom, smallStoreConfig, storeCore, testMessage } from "./testing.ts";
import type { StoreConfig } from "./config.ts";
import { StoreError } from "./errors.ts";

const enc = new TextEncoder();
const LAZY_CQ_SYNC = { leastUnits: 3, maxSkips: 2 };

function newStore(
  disk: SimDisk,
  patch: Partial<StoreConfig> = {},
  nowMs = () => 1_700_000_000_000,
) {
  return new MessageStore({ files: disk, config: smallStoreConfig("/data", patch), nowMs });
}

Deno.test("MessageStore.putMessage() then getMessage() returns the same bytes, properties and offsets", async () => {
  const disk = new SimDisk();
  const store = newStore(disk);
  await store.open();
  const results: PutResult[] = [];
  for (let i = 0; i < 30; i++) {
    results.push(
      await store.putMessage(
        testMessage("T", i % 2, enc.encode(`m${i}`), { TAGS: i % 3 ? "A" : "B", KEYS: `k${i}` }),
      ),
    );
  }
  assert.deepEqual(results.filter((r) => r.queueId === 0).map((r) => r.queueOffset), [
    ...Array(15).keys(),
  ]);
  const got = store.getMessage("T", 0, 0, { maxMsgNums: 32, maxBytes: 1 << 20 });
  assert.equal(got.status, "FOUND");
  assert.equal(got.messages.length, 15);
  assert.deepEqual(
    got.messages.map((m) => new TextDecoder().decode(m.record.body)),
    [...Array(15).keys()].map((i) => `m${i * 2}`),
  );
  assert.equal(got.nextBeginOffset, 15);
  assert.equal(got.maxOffset, 15);

  const tagged = store.getMessage("T", 0, 0, {
    maxMsgNums: 32,
    maxBytes: 1 << 20,
    filter: { tags: new Set(["B"]) },
  });
  assert.deepEqual(tagged.messages.map((m) => m.queueOffset), [0, 3, 6, 9, 12]);

  assert.equal(
    store.getMessage("T", 0, 15, { maxMsgNums: 1, maxBytes: 1 << 20 }).status,
    "OFFSET_OVERFLOW_ONE",
  );
  assert.equal(
    store.getMessage("T", 0, 99, { maxMsgNums: 1, maxBytes: 1 << 20 }).status,
    "OFFSET_OVERFLOW_BADLY",
  );
  assert.equal(
    store.getMessage("T", 7, 0, { maxMsgNums: 1, maxBytes: 1 << 20 }).status,
    "NO_MATCHED_LOGIC_QUEUE",
  );

  const byKey = store.queryMessage("T", "k7", {
    maxNum: 10,
    beginTimestamp: 0,
    endTimestamp: Number.MAX_SAFE_INTEGER,
  });
  assert.equal(byKey.length, 1);
  assert.equal(new TextDecoder().decode(byKey[0].body), "m7");
  await store.close();
  assert.equal(disk.exists("/data/abort"), false);
});

Deno.test("MessageStore under SYNC_FLUSH answers FLUSHED and shows consumers only flushed data", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  const p = store.putMessage(testMessage("T", 0, enc.encode("x")));
  assert.equal(store.getMaxOffsetInQueue("T", 0), 0);
  const r = await p;
  assert.equal(r.durability, "FLUSHED");
  assert.equal(store.getMaxOffsetInQueue("T", 0), 1);
  assert.ok(disk.durableBytes("/data/commitlog/00000000000000000000")!.length > 0);
  await store.close();
});

Deno.test("MessageStore refuses writes after a failed fdatasync and stays refusing after restart of the flush", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  disk.failDatasync("/data/commitlog/00000000000000000000");
  await assert.rejects(
    store.putMessage(testMessage("T", 0, enc.encode("x"))),
    (e: unknown) => e instanceof StoreError && e.code === "STORE_NOT_WRITABLE",
  );
  await assert.rejects(
    store.putMessage(testMessage("T", 0, enc.encode("y"))),
    (e: unknown) => e instanceof StoreError && e.code === "STORE_NOT_WRITABLE",
  );
  assert.equal(store.writable, false);
  await store.close();
  assert.equal(disk.exists("/data/abort"), true, "an unclean store keeps its abort file");
});

Deno.test("MessageStore.getOffsetInQueueByTime() searches store timestamps", async () => {
  let now = 1000;
  const disk = new SimDisk();
  const store = newStore(disk, {}, () => now);
  await store.open();
  for (let i = 0; i < 10; i++) {
    now = 1000 + i * 10;
    await store.putMessage(testMessage("T", 0, enc.encode(`m${i}`)));
  }
  assert.equal(store.getOffsetInQueueByTime("T", 0, 1035), 4);
  assert.equal(store.getOffsetInQueueByTime("T", 0, 0), 0);
  assert.equal(store.getOffsetInQueueByTime("T", 0, 99999), 10);
  await store.close();
});

Deno.test("Retention deletes expired segments at deleteWhen and derived files below the new minimum", async () => {
  const hour = 3_600_000;
  let now = new Date(2026, 0, 1, 3, 0, 0).getTime(); // 03:00 local: not yet deleteWhen
  const disk = new SimDisk({ nowMs: () => now });
  const store = new MessageStore({
    files: disk,
    config: smallStoreConfig("/data", { fileReservedTime: 72 }),
    nowMs: () => now,
  });
  await store.open();
  for (let i = 0; i < 40; i++) await store.putMessage(testMessage("T", 0, new Uint8Array(900)));
  const segmentsBefore = store.stats().segments;
  assert.ok(segmentsBefore >= 4);
  now += 73 * hour; // 04:00 three days later: files written at 03:00 have expired
  await store.putMessage(testMessage("T", 0, new Uint8Array(900)));
  // The newest write refreshed only the last segment's mtime.
  const deleted = await store.deleteExpiredFiles(false);
  assert.equal(deleted, Math.min(segmentsBefore - 1, 10));
  assert.ok(store.minPhysicalOffset > 0);
  const minQueueOffset = store.getMinOffsetInQueue("T", 0);
  assert.ok(minQueueOffset > 0);
  const first = store.getMessage("T", 0, minQueueOffset, { maxMsgNums: 1, maxBytes: 1 << 20 });
  assert.equal(first.status, "FOUND");
  assert.ok(first.messages[0].record.physicalOffset >= store.minPhysicalOffset);
  assert.equal(
    store.getMessage("T", 0, 0, { maxMsgNums: 1, maxBytes: 1 << 20 }).status,
    "OFFSET_TOO_SMALL",
  );
  await store.close();
});

Deno.test("Retention deletes at any hour once disk use passes diskSpaceCleanForciblyRatio", async () => {
  const now = new Date(2026, 0, 1, 12, 0, 0).getTime();
  let used = 50;
  const disk = new SimDisk({ nowMs: () => now });
  const store = new MessageStore({
    files: disk,
    config: smallStoreConfig("/data"),
    nowMs: () => now,
    diskUsedRatio: () => used,
  });
  await store.open();
  for (let i = 0; i < 20; i++) await store.putMessage(testMessage("T", 0, new Uint8Array(900)));
  assert.equal(
    await store.deleteExpiredFiles(false),
    0,
    "nothing expired, low disk use, wrong hour",
  );
  used = 88;
  assert.ok(await store.deleteExpiredFiles(false) > 0);
  used = 95;
  await store.deleteExpiredFiles(false);
  assert.equal(store.writable, false, "past diskSpaceWarningLevelRatio puts are refused");
  await assert.rejects(
    store.putMessage(testMessage("T", 0, new Uint8Array(1))),
    (e: unknown) => e instanceof StoreError && e.code === "STORE_NOT_WRITABLE",
  );
  await store.close();
});

// ---- simulated power loss ----

interface Acked {
  topic: string;
  queueId: number;
  queueOffset: number;
  body: Uint8Array;
}

async function powerLossRun(seed: number) {
  const random = seededRandom(seed);
  const disk = new SimDisk();
  const store = newStore(disk, { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  const acked: Acked[] = [];
  const all: Promise<unknown>[] = [];
  const steps = 5 + Math.floor(random() * 40);
  for (let step = 0; step < steps; step++) {
    const n = 1 + Math.floor(random() * 6);
    for (let i = 0; i < n; i++) {
      const topic = random() < 0.5 ? "A" : "B";
      const queueId = Math.floor(random() * 2);
      const body = new Uint8Array(Math.floor(random() * 1500)).map(() =>
        Math.floor(random() * 256)
      );
      const p = store.putMessage(
        testMessage(topic, queueId, body, { KEYS: `s${seed}-${step}-${i}` }),
      )
        .then((r) => acked.push({ topic, queueId, queueOffset: r.queueOffset, body }));
      all.push(p.catch(() => {}));
    }
    const action = random();
    if (action < 0.4) await Promise.all(all);
    else if (action < 0.45) await store.checkpoint().catch(() => {});
    // A periodic one, which syncs only the ConsumeQueues due and records no more than the
    // skipped ones allow (CqSyncPolicy).
    else if (action < 0.5) await storeCore(store).checkpoints.run(LAZY_CQ_SYNC).catch(() => {});
    else if (action < 0.7) await new Promise((r) => setTimeout(r, 0));
  }
  // Let a random amount of work finish, then cut the power mid-flight.
  for (let k = Math.floor(random() * 4); k > 0; k--) await Promise.resolve();
  const ackedAtCrash = acked.slice();
  disk.crash({ policy: "torn-tail", random, keepUnsyncedNamesRatio: 0.5 });
  await Promise.all(all);

  const again = newStore(disk, { flushDiskType: "SYNC_FLUSH" });
  await again.open();
  // Every acknowledged message is there, byte for byte, at its offset.
  for (const a of ackedAtCrash) {
    const got = again.getMessage(a.topic, a.queueId, a.queueOffset, {
      maxMsgNums: 1,
      maxBytes: 1 << 20,
    });
    assert.equal(got.status, "FOUND", `acked ${a.topic}:${a.queueId}@${a.queueOffset} lost`);
    assert.deepEqual(got.messages[0].record.body, a.body);
  }
  // Every ConsumeQueue entry points at a CRC-valid record of its own queue, densely.
  for (const topic of ["A", "B"]) {
    for (const queueId of [0, 1]) {
      const max = again.getMaxOffsetInQueue(topic, queueId);
      for (let off = 0; off < max; off++) {
        const got = again.getMessage(topic, queueId, off, { maxMsgNums: 1, maxBytes: 1 << 20 });
        assert.equal(got.status, "FOUND", `entry ${topic}:${queueId}@${off} unreadable`);
        const rec = got.messages[0].record;
        assert.equal(rec.topic, topic);
        assert.equal(rec.queueId, queueId);
        assert.equal(rec.queueOffset, off);
      }
    }
  }
  // The store takes writes again and continues the sequence.
  const next = await again.putMessage(testMessage("A", 0, enc.encode("after")));
  assert.equal(next.queueOffset, again.getMaxOffsetInQueue("A", 0) - 1);
  await again.close();
}

Deno.test("MessageStore keeps every SYNC_FLUSH ack across simulated power loss (300 seeds)", async () => {
  for (let seed = 1; seed <= 300; seed++) {
    try {
      await powerLossRun(seed);
    } catch (err) {
      throw new Error(`power-loss run failed with seed ${seed}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
});

Deno.test("MessageStore.deleteTopic() restarts that topic's queue offsets and keeps the others", async () => {
  const disk = new SimDisk();
  const store = newStore(disk);
  await store.open();
  const put = (topic: string, queueId: number) =>
    store.putMessage(testMessage(topic, queueId, enc.encode("m"))).then((r) => r.queueOffset);
  assert.deepEqual(
    [await put("A", 0), await put("A", 0), await put("A", 1), await put("AB", 0)],
    [0, 1, 0, 0],
  );
  store.deleteTopic("A");
  assert.deepEqual([await put("A", 0), await put("A", 1), await put("AB", 0)], [0, 0, 1]);
  await store.close();
});

Deno.test("MessageStore.getMessage() pages through interleaved queues across segment ends and skips a damaged record", async () => {
  const disk = new SimDisk();
  // 8 KiB segments: spans cross segment ends (BLANK padding) now and then.
  const store = newStore(disk, { mappedFileSizeCommitLog: 8 * 1024 });
  await store.open();
  const random = seededRandom(7);
  const sent = new Map<number, string[]>();
  for (let i = 0; i < 400; i++) {
    // Queue 0 is busy, queue 1 quiet (one message in 40): its neighbours are far apart.
    const queueId = i % 40 === 0 ? 1 : i % 2 === 0 ? 0 : 2;
    const body = `q${queueId}-${i}-${"x".repeat(Math.floor(random() * 300))}`;
    await store.putMessage(testMessage("T", queueId, enc.encode(body)));
    sent.set(queueId, [...(sent.get(queueId) ?? []), body]);
  }
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  for (const queueId of [0, 1, 2]) {
    const bodies: string[] = [];
    for (let offset = 0; offset < sent.get(queueId)!.length;) {
      const got = store.getMessage("T", queueId, offset, { maxMsgNums: 32, maxBytes: 1 << 20 });
      assert.equal(got.status, "FOUND", `queue ${queueId} at ${offset}`);
      got.messages.forEach((m, k) => {
        assert.equal(m.queueOffset, offset + k);
        assert.equal(m.record.queueOffset, offset + k);
      });
      bodies.push(...got.messages.map((m) => text(m.record.body)));
      offset = got.nextBeginOffset;
    }
    assert.deepEqual(bodies, sent.get(queueId), `queue ${queueId}`);
  }
  // A record damaged on disk is skipped whether it was read alone or inside a span. It is
  // read from disk: the tail cache restarts at each segment end, and with 8 KiB segments it
  // holds only the newest segment.
  const first = store.getMessage("T", 0, 0, { maxMsgNums: 3, maxBytes: 1 << 20 });
  const victim = first.messages[1].record;
  const segment = storeCore(store).commitLog.findSegment(victim.physicalOffset)!;
  const at = victim.physicalOffset - segment.startOffset + victim.totalSize - 1;
  segment.file.writeAt(new Uint8Array([0xff ^ victim.body.at(-1)!]), at);
  const again = store.getMessage("T", 0, 0, { maxMsgNums: 3, maxBytes: 1 << 20 });
  assert.deepEqual(again.messages.map((m) => m.queueOffset), [0, 2]);
  assert.equal(again.nextBeginOffset, 3);
  await store.close();
});

Deno.test("a periodic checkpoint skips sparse ConsumeQueues, then syncs them all once idle", async () => {
  const disk = new SimDisk();
  const store = newStore(disk);
  await store.open();
  const core = storeCore(store);
  const policy = { leastUnits: 1000, maxSkips: 100 };
  await core.checkpoints.run(policy); // the first one finds dispatch has moved since -1
  await store.putMessage(testMessage("A", 0, enc.encode("a")));
  await store.putMessage(testMessage("B", 0, enc.encode("b")));
  await core.checkpoints.run(policy);
  assert.equal(core.consumeQueues.find("A", 0)!.needsSync, true, "skipped: 1 unit < 1000");
  const checkpoint = core.checkpoints.file!.read()!;
  assert.ok(checkpoint.dispatchSafeOffset <= core.consumeQueues.find("A", 0)!.unsyncedFrom);
  await core.checkpoints.run(policy); // nothing dispatched since: idle, so every queue
  assert.equal(core.consumeQueues.find("A", 0)!.needsSync, false);
  assert.equal(core.consumeQueues.find("B", 0)!.needsSync, false);
  await store.close();
});
