import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { seededRandom } from "../testing.ts";
import type { TimerStoreConfig } from "./timer_config.ts";
import { TIMER_RECORD_BYTES } from "./timer_record.ts";
import { TimerStore } from "./timer_store.ts";

// The caller of the timer store, modelled: timers are numbered by their place in the
// caller's timer queue (seq); each checkpoint saves the number fed so far; after a crash
// the caller re-feeds from the saved offset and re-issues its cancels. The disk is cut at
// random points (torn tail, lost names), sometimes in the middle of a checkpoint.
const CONFIG: Partial<TimerStoreConfig> = {
  precisionMs: 10,
  fineWindowMs: 1_000,
  coarsePrecisionMs: 200,
  horizonMs: 20_000,
  logSegmentBytes: 32 * TIMER_RECORD_BYTES,
};
const P = 10;
const W = 1_000;
const H = 20_000;

interface Timer {
  seq: number;
  deliverMs: number;
}

/** What a successful checkpoint vouches for: readTime, fed count, and what had fired. */
interface Snapshot {
  readTimeMs: number;
  consumed: number;
  fired: Set<number>;
}

class Model {
  timers: Timer[] = [];
  cancelled = new Set<number>();
  /** Timers added already due at some point: they go to the next slot rather than their
   * own, so a copy re-fed after a crash may sit in another slot and fire once more. */
  late = new Set<number>();
  /** Fired since the snapshot the store last restarted from, plus what that vouched for. */
  fired = new Set<number>();
  /** Fires per seq since the last reopen. */
  firedSinceOpen = new Map<number, number>();
  snapshots: Snapshot[] = [];
  vouched: Snapshot = { readTimeMs: -1, consumed: 0, fired: new Set() };
  now: number;
  constructor(readonly rand: () => number, start: number) {
    this.now = start;
  }
  int(n: number): number {
    return Math.floor(this.rand() * n);
  }
}

async function run(disk: SimDisk, m: Model, store: TimerStore, ops: number) {
  const checkpoint = () => {
    const snap = {
      readTimeMs: store.readTimeMs,
      consumed: m.timers.length,
      fired: new Set(m.fired),
    };
    m.snapshots.push(snap);
    return store.checkpoint(snap.consumed);
  };
  const advance = async (to: number) => {
    for (;;) {
      const result = store.advance(to);
      for (const e of result.entries) {
        const t = m.timers[e.commitLogOffset];
        assert.ok(e.deliverMs === t.deliverMs && result.readTimeMs >= t.deliverMs, "fired early");
        assert.ok(!m.cancelled.has(t.seq), `cancelled timer ${t.seq} fired`);
        assert.ok(
          !m.vouched.fired.has(t.seq),
          `timer ${t.seq} fired before the checkpoint fired again`,
        );
        m.fired.add(t.seq);
        m.firedSinceOpen.set(t.seq, (m.firedSinceOpen.get(t.seq) ?? 0) + 1);
      }
      if (result.status === "caught-up") return;
      if (result.status === "checkpoint-needed") await checkpoint();
    }
  };
  for (let i = 0; i < ops; i++) {
    const r = m.rand();
    if (r < 0.45) {
      const kind = m.int(4);
      const delay =
        [m.int(3 * W), W + m.int(H - W), -m.int(50), m.int(40) * 200 + m.int(3) - 1][kind];
      const deliverMs = Math.max(0, Math.min(m.now + delay, m.now + H));
      const t = { seq: m.timers.length, deliverMs };
      m.timers.push(t);
      if (deliverMs <= store.readTimeMs) m.late.add(t.seq);
      store.add({ deliverMs, commitLogOffset: t.seq, msgSize: 1 }, m.now);
    } else if (r < 0.55 && m.timers.length > 0) {
      const t = m.timers[m.int(m.timers.length)];
      const status = store.cancel(t.seq, t.deliverMs, m.now);
      if (m.fired.has(t.seq)) assert.equal(status, "already-fired");
      if (status === "cancelled") {
        assert.ok(!m.cancelled.has(t.seq), "cancelled twice");
        m.cancelled.add(t.seq);
      }
    } else if (r < 0.9) {
      m.now += m.rand() < 0.9 ? 1 + m.int(150) : 1 + m.int(3 * W);
      await advance(m.now);
    } else if (r < 0.97) {
      await checkpoint();
    } else {
      store.deleteRetiredSegments();
    }
  }
  // The crash: sometimes while a checkpoint is on its way (after 0-39 microtasks of it).
  if (m.rand() < 0.3) {
    checkpoint().catch(() => {});
    for (let i = m.int(40); i > 0; i--) await Promise.resolve();
  }
  disk.crash({ policy: "torn-tail", random: m.rand, keepUnsyncedNamesRatio: m.int(2) * 0.5 });
}

async function reopen(disk: SimDisk, m: Model): Promise<TimerStore> {
  const store = await TimerStore.open({ files: disk, dir: "/timer", nowMs: m.now, config: CONFIG });
  // Which checkpoint survived: the last one with this readTime and offset (none: a new store).
  const match = m.snapshots.findLast((s) =>
    s.readTimeMs === store.readTimeMs && s.consumed === store.consumedQueueOffset
  );
  if (store.consumedQueueOffset > 0 || match) assert.ok(match, "checkpoint matches no attempt");
  m.vouched = match ?? { readTimeMs: -1, consumed: 0, fired: new Set() };
  m.fired = new Set(m.vouched.fired);
  m.firedSinceOpen.clear();
  for (const seq of m.cancelled) {
    const t = m.timers[seq];
    store.cancel(seq, t.deliverMs, m.now); // any answer: the marker may have survived
  }
  for (const t of m.timers.slice(m.vouched.consumed)) {
    if (m.cancelled.has(t.seq)) continue;
    if (t.deliverMs <= store.readTimeMs) m.late.add(t.seq);
    store.add({ deliverMs: t.deliverMs, commitLogOffset: t.seq, msgSize: 1 }, m.now);
  }
  return store;
}

Deno.test("TimerStore loses no checkpointed timer and fires none early across crashes", async () => {
  for (let seed = 1; seed <= 300; seed++) {
    try {
      const rand = seededRandom(seed);
      const disk = new SimDisk();
      const m = new Model(rand, 1_700_000_000_000 + Math.floor(rand() * 1000));
      let store = await TimerStore.open({
        files: disk,
        dir: "/timer",
        nowMs: m.now,
        config: CONFIG,
      });
      const crashes = 1 + m.int(3);
      for (let c = 0; c < crashes; c++) {
        await run(disk, m, store, 20 + m.int(200));
        store = await reopen(disk, m);
      }
      const end = m.now + H + 2 * W;
      while (store.readTimeMs < Math.floor(end / P) * P) {
        const result = store.advance(end);
        for (const e of result.entries) {
          const t = m.timers[e.commitLogOffset];
          assert.ok(result.readTimeMs >= t.deliverMs, "fired early");
          assert.ok(!m.cancelled.has(t.seq), `cancelled timer ${t.seq} fired`);
          assert.ok(
            !m.vouched.fired.has(t.seq),
            `timer ${t.seq} fired before the checkpoint fired again`,
          );
          m.firedSinceOpen.set(t.seq, (m.firedSinceOpen.get(t.seq) ?? 0) + 1);
        }
        if (result.status === "checkpoint-needed") await store.checkpoint(m.timers.length);
      }
      for (const t of m.timers) {
        if (m.cancelled.has(t.seq) || m.vouched.fired.has(t.seq)) continue;
        const n = m.firedSinceOpen.get(t.seq) ?? 0;
        assert.ok(n >= 1, `timer ${t.seq} due ${t.deliverMs - m.now} lost`);
        if (t.seq < m.vouched.consumed && !m.late.has(t.seq)) {
          assert.equal(n, 1, `timer ${t.seq} fired ${n} times`);
        }
      }
      assert.equal(store.pendingCount, 0);
      await store.close();
    } catch (err) {
      throw new Error(`seed ${seed}: ${(err as Error).message}`, { cause: err });
    }
  }
});
