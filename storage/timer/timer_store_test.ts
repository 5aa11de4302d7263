import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { StoreError } from "../errors.ts";
import { seededRandom } from "../testing.ts";
import { DAY_MS, HOUR_MS, TimerError, type TimerStoreConfig } from "./timer_config.ts";
import { type TimerEntry, TimerStore } from "./timer_store.ts";

const T0 = 1_700_000_000_000;
const SMALL: Partial<TimerStoreConfig> = {
  precisionMs: 10,
  fineWindowMs: 2_000,
  coarsePrecisionMs: 500,
  horizonMs: 60_000,
  logSegmentBytes: 56 * 64,
};

function openStore(disk: SimDisk, nowMs = T0, config: Partial<TimerStoreConfig> = SMALL) {
  return TimerStore.open({ files: disk, dir: "/data/timer", nowMs, config });
}

/** Advances to `nowMs` in one go (checkpointing when asked), returning what fired. */
async function drain(store: TimerStore, nowMs: number, offset = 0): Promise<TimerEntry[]> {
  const out: TimerEntry[] = [];
  for (;;) {
    const result = store.advance(nowMs);
    out.push(...result.entries);
    if (result.status === "caught-up") return out;
    if (result.status === "checkpoint-needed") await store.checkpoint(offset);
  }
}

Deno.test("TimerStore.advance() fires each timer once, in deliverMs order, never early", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  assert.equal(store.readTimeMs, T0);
  const delays = [5, 10, 11, 1_999, 2_000, 2_001, 7_777, 59_999, 60_000, 0];
  delays.forEach((d, i) => store.add({ deliverMs: T0 + d, commitLogOffset: i, msgSize: 100 }, T0));
  assert.equal(store.pendingCount, delays.length);
  const fired: [number, number][] = [];
  for (let now = T0; now <= T0 + 61_000; now += 7) {
    for (const e of await drain(store, now)) {
      assert.ok(now >= e.deliverMs, "fired early");
      // Its slot, or the first one after readTime T0 for a timer due at once.
      const slotMs = Math.max(Math.ceil(e.deliverMs / 10) * 10, T0 + 10);
      assert.ok(now - 7 < slotMs, "not fired with its slot");
      fired.push([e.commitLogOffset, e.deliverMs - T0]);
    }
  }
  const expected = delays.map((d, i) => [i, d]).sort((a, b) => a[1] - b[1]);
  assert.deepEqual(fired, expected);
  assert.equal(store.pendingCount, 0);
  await store.close();
});

Deno.test("TimerStore.add() accepts exactly horizonMs and refuses horizonMs + 1", async (t) => {
  const disk = new SimDisk();
  const config = { precisionMs: 1_000, fineWindowMs: 2 * HOUR_MS, horizonMs: 365 * DAY_MS };
  const store = await openStore(disk, T0, config);
  const horizon = T0 + 365 * DAY_MS;
  await t.step("horizonMs + 1 is refused with a typed error", () => {
    assert.throws(
      () => store.add({ deliverMs: horizon + 1, commitLogOffset: 2, msgSize: 1 }, T0),
      (err: unknown) => err instanceof TimerError && err.code === "TIMER_BEYOND_HORIZON",
    );
  });
  await t.step("bad numbers are refused", () => {
    for (const bad of [-1, 1.5, NaN]) {
      assert.throws(
        () => store.add({ deliverMs: bad, commitLogOffset: 3, msgSize: 1 }, T0),
        (err: unknown) => err instanceof TimerError && err.code === "TIMER_ILLEGAL",
      );
    }
  });
  await t.step("horizonMs itself is accepted and fires at its time, not before", async () => {
    store.add({ deliverMs: horizon, commitLogOffset: 1, msgSize: 1 }, T0);
    assert.equal(store.pendingCount, 1);
    assert.deepEqual(await drain(store, horizon - 1), []);
    const fired = await drain(store, horizon);
    assert.deepEqual(fired.map((e) => e.deliverMs), [horizon]);
  });
  await store.close();
});

Deno.test("TimerStore rolls far timers from coarse to fine slots in order, never early", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  const rand = seededRandom(7);
  const deliver = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const d = T0 + 2_000 + Math.floor(rand() * 58_000);
    deliver.set(i, d);
    store.add({ deliverMs: d, commitLogOffset: i, msgSize: 1 }, T0);
  }
  const fired: TimerEntry[] = [];
  for (let now = T0; now <= T0 + 60_010; now += 3) {
    for (const e of await drain(store, now)) {
      assert.ok(store.readTimeMs >= e.deliverMs && now >= e.deliverMs, "early");
      assert.ok(now - 3 < Math.ceil(e.deliverMs / 10) * 10, "not fired with its slot");
      fired.push(e);
    }
  }
  assert.equal(fired.length, 300);
  assert.deepEqual(
    fired.map((e) => e.deliverMs),
    [...deliver.values()].sort((a, b) => a - b),
  );
  assert.deepEqual(new Set(fired.map((e) => e.commitLogOffset)).size, 300);
  await store.close();
});

Deno.test("TimerStore.cancel()", async (t) => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  const add = (offset: number, delay: number) =>
    store.add({ deliverMs: T0 + delay, commitLogOffset: offset, msgSize: 1 }, T0);

  await t.step("before its slot fires suppresses it (fine and coarse)", async () => {
    add(1, 100);
    add(2, 100);
    add(3, 30_000);
    add(4, 30_000);
    assert.equal(store.cancel(1, T0 + 100, T0), "cancelled");
    assert.equal(store.cancel(3, T0 + 30_000, T0), "cancelled");
    assert.equal(store.cancel(3, T0 + 30_000, T0), "not-found", "second cancel");
    assert.equal(store.cancel(99, T0 + 100, T0), "not-found", "never added");
    assert.equal(store.pendingCount, 2);
    const fired = await drain(store, T0 + 30_000);
    assert.deepEqual(fired.map((e) => e.commitLogOffset), [2, 4]);
  });

  await t.step("after its slot fired answers already-fired", () => {
    assert.equal(store.cancel(2, T0 + 100, T0 + 30_000), "already-fired");
  });

  await t.step("at the firing moment readTime decides, not nowMs", async () => {
    const d = T0 + 40_000;
    store.add({ deliverMs: d, commitLogOffset: 5, msgSize: 1 }, T0 + 30_000);
    store.add({ deliverMs: d, commitLogOffset: 6, msgSize: 1 }, T0 + 30_000);
    await drain(store, d - 1);
    // nowMs has reached deliverMs but advance() has not fired the slot: cancel wins.
    assert.equal(store.cancel(5, d, d), "cancelled");
    assert.deepEqual((await drain(store, d)).map((e) => e.commitLogOffset), [6]);
    assert.equal(store.cancel(6, d, d), "already-fired");
  });
  await store.close();
});

Deno.test("TimerStore.add() of a due time fires with the next slot", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  await drain(store, T0 + 1_000);
  store.add({ deliverMs: T0 + 500, commitLogOffset: 1, msgSize: 1 }, T0 + 1_000);
  store.add({ deliverMs: T0 + 1_000, commitLogOffset: 2, msgSize: 1 }, T0 + 1_000);
  assert.deepEqual(store.advance(T0 + 1_009).entries, []);
  const result = store.advance(T0 + 1_010);
  assert.deepEqual(result.entries.map((e) => e.commitLogOffset), [1, 2]);
  assert.equal(result.readTimeMs, T0 + 1_010, "fired by the next slot");
  await store.close();
});

Deno.test("TimerStore.advance() is bounded per call and waits for a checkpoint", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  assert.deepEqual(store.advance(T0 + 1_000, 10).status, "slot-limit");
  assert.equal(store.readTimeMs, T0 + 100);
  const far = store.advance(T0 + 10_000, 1_000_000);
  assert.equal(far.status, "checkpoint-needed");
  assert.equal(far.readTimeMs, T0 + 2_000, "at most fineWindowMs past the checkpoint");
  await store.checkpoint(0);
  assert.equal(store.advance(T0 + 10_000, 1_000_000).status, "checkpoint-needed");
  assert.equal(store.readTimeMs, T0 + 4_000);
  await store.close();
});

Deno.test("TimerStore.checkpoint() and open() restart at the saved readTime", async (t) => {
  const disk = new SimDisk();
  let store = await openStore(disk);
  for (let i = 0; i < 100; i++) {
    store.add({ deliverMs: T0 + 100 * i, commitLogOffset: i, msgSize: i }, T0);
  }
  const before = await drain(store, T0 + 2_500);
  assert.equal(before.length, 26);
  await store.checkpoint(100);
  const after = await drain(store, T0 + 3_000);
  assert.equal(after.length, 5);
  disk.crash({ policy: "torn-tail", random: seededRandom(1) });

  await t.step("entries after the checkpoint fire again, none before it", async () => {
    store = await openStore(disk, T0 + 9_999_999);
    assert.equal(store.readTimeMs, T0 + 2_500);
    assert.equal(store.consumedQueueOffset, 100);
    assert.equal(store.pendingCount, 74);
    const again = await drain(store, T0 + 10_000);
    assert.deepEqual(again.map((e) => e.commitLogOffset), [...Array(74).keys()].map((i) => i + 26));
    assert.deepEqual(again[0], {
      deliverMs: T0 + 2_600,
      commitLogOffset: 26,
      msgSize: 26,
      enqueueMs: T0,
    });
    await store.close();
  });

  await t.step("a store without a checkpoint discards its log", async () => {
    const fresh = new SimDisk();
    const s = await openStore(fresh);
    s.add({ deliverMs: T0 + 100, commitLogOffset: 1, msgSize: 1 }, T0);
    await s.flush();
    await s.close();
    const reopened = await openStore(fresh, T0 + 50);
    assert.equal(reopened.pendingCount, 0);
    assert.equal(reopened.consumedQueueOffset, 0);
    assert.equal(reopened.readTimeMs, T0 + 50);
    await reopened.close();
  });
});

Deno.test("TimerStore.open() refuses another wheel geometry and a damaged flushed log", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  for (let i = 0; i < 200; i++) {
    store.add({ deliverMs: T0 + 5_000, commitLogOffset: i, msgSize: 1 }, T0);
  }
  await store.checkpoint(200);
  await store.close();
  await assert.rejects(
    openStore(disk, T0, { ...SMALL, precisionMs: 20 }),
    (err: unknown) => err instanceof TimerError && err.code === "TIMER_CONFIG_CHANGED",
  );
  const path = "/data/timer/timerlog/00000000000000000000";
  const file = disk.open(path);
  file.writeAt(new Uint8Array([0xff]), 56 * 10 + 30);
  await file.datasync();
  await assert.rejects(
    openStore(disk),
    (err: unknown) => err instanceof TimerError && err.code === "TIMER_LOG_CORRUPT",
  );
});

Deno.test("TimerStore refuses writes after a failed fdatasync", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  store.add({ deliverMs: T0 + 100, commitLogOffset: 1, msgSize: 1 }, T0);
  await store.flush();
  store.add({ deliverMs: T0 + 100, commitLogOffset: 2, msgSize: 1 }, T0);
  disk.failDatasync("/data/timer/timerlog/00000000000000000000");
  await assert.rejects(store.checkpoint(2));
  assert.throws(
    () => store.add({ deliverMs: T0 + 100, commitLogOffset: 3, msgSize: 1 }, T0),
    (err: unknown) => err instanceof StoreError && err.code === "STORE_NOT_WRITABLE",
  );
  await store.close();
});

Deno.test("TimerStore.deleteRetiredSegments() keeps what recovery needs", async () => {
  const disk = new SimDisk();
  const store = await openStore(disk);
  // 64 records a segment: a far timer pins the first segment; fired ones free the others.
  store.add({ deliverMs: T0 + 50_000, commitLogOffset: 0, msgSize: 1 }, T0);
  for (let i = 1; i < 64 * 5; i++) {
    store.add({ deliverMs: T0 + 100 + (i >> 6) * 200, commitLogOffset: i, msgSize: 1 }, T0);
  }
  const dir = "/data/timer/timerlog";
  assert.equal(disk.list(dir).length, 5);
  assert.equal(store.deleteRetiredSegments(), 0, "nothing before a checkpoint");
  await drain(store, T0 + 1_000);
  await store.checkpoint(320);
  store.add({ deliverMs: T0 + 1_500, commitLogOffset: 999, msgSize: 1 }, T0 + 1_000);
  assert.equal(store.deleteRetiredSegments(), 4, "segments 1-4; segment 0 is pinned");
  assert.deepEqual(disk.list(dir), ["00000000000000000000", "00000000000000017920"]);
  await store.checkpoint(321);
  await store.close();
  disk.crash({ policy: "torn-tail", random: seededRandom(3) });
  const reopened = await openStore(disk, T0 + 1_000);
  assert.equal(reopened.pendingCount, 2);
  const fired = await drain(reopened, T0 + 60_000);
  assert.deepEqual(fired.map((e) => e.commitLogOffset), [999, 0]);
  await reopened.close();
});

Deno.test("TimerStore memory does not grow with the number of timers", async () => {
  const disk = new SimDisk();
  const store = await TimerStore.open({ files: disk, dir: "/t", nowMs: T0 });
  const rand = seededRandom(42);
  const addSome = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const d = T0 + Math.floor(rand() * 365 * DAY_MS);
      store.add({ deliverMs: d, commitLogOffset: i * 100, msgSize: 100 }, T0);
    }
  };
  addSome(0, 1_000); // the first log segment exists from here on (64 MiB: 1.2M timers)
  const before = store.memoryBytes();
  // 1.44M fine + 525,842 coarse slots, 12 bytes each, plus the log's buffers.
  assert.ok(before > 23_000_000 && before < 24_000_000, `memoryBytes ${before}`);
  addSome(1_000, 200_000);
  assert.equal(store.pendingCount, 200_000);
  assert.equal(store.memoryBytes(), before);
  await store.checkpoint(200_000);
  await store.close();
  const reopened = await TimerStore.open({ files: disk, dir: "/t", nowMs: T0 + HOUR_MS });
  assert.equal(reopened.pendingCount, 200_000);
  // The log's write batch is allocated by the first add, as it was above.
  reopened.add({ deliverMs: T0 + DAY_MS, commitLogOffset: 1, msgSize: 100 }, T0 + HOUR_MS);
  assert.equal(reopened.memoryBytes(), before);
  await reopened.close();
});
