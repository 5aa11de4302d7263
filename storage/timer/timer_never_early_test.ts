import assert from "node:assert/strict";
import fc from "fast-check";
import { SimDisk } from "../sim_disk.ts";
import type { TimerStoreConfig } from "./timer_config.ts";
import { TIMER_RECORD_BYTES } from "./timer_record.ts";
import { type TimerEntry, TimerStore } from "./timer_store.ts";

// Wheel shapes small enough to walk every slot of the horizon: precision 1-100 ms, a
// coarse slot of 1-30 fine slots, a window of 2-8 coarse slots (+ up to 20 fine slots),
// a horizon of 1-150 coarse slots (+ up to 1 s).
const shapeArb = fc.record({
  precisionMs: fc.constantFrom(1, 2, 3, 5, 10, 100),
  coarseInFine: fc.integer({ min: 1, max: 30 }),
  windowInCoarse: fc.integer({ min: 2, max: 8 }),
  windowExtraFine: fc.integer({ min: 0, max: 20 }),
  horizonInCoarse: fc.integer({ min: 1, max: 150 }),
  horizonExtraMs: fc.nat(1000),
  segmentRecords: fc.integer({ min: 1, max: 40 }),
  startMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
});

// kind: 0 anywhere up to the horizon; 1 a fine slot boundary +-2; 2 the fine window's edge
// +-2; 3 a coarse slot boundary +-2; 4 the horizon itself or 1-2 ms short; 5 due already;
// 6-7 the previous timer's time +-2 (crowded slots); 8 a delay of precisionMs +-2.
const opArb = fc.oneof(
  fc.record({
    op: fc.constant("add" as const),
    kind: fc.integer({ min: 0, max: 8 }),
    u: fc.double({ min: 0, max: 1, noNaN: true }),
    k: fc.integer({ min: -2, max: 2 }),
  }),
  fc.record({
    op: fc.constant("step" as const),
    u: fc.double({ min: 0, max: 1, noNaN: true }),
    big: fc.boolean(),
  }),
);

type ShapeValue = typeof shapeArb extends fc.Arbitrary<infer T> ? T : never;

function configOf(shape: ShapeValue): TimerStoreConfig {
  const p = shape.precisionMs;
  const coarsePrecisionMs = shape.coarseInFine * p;
  const config: Partial<TimerStoreConfig> = {
    precisionMs: p,
    coarsePrecisionMs,
    fineWindowMs: shape.windowInCoarse * coarsePrecisionMs + shape.windowExtraFine * p,
    horizonMs: shape.horizonInCoarse * coarsePrecisionMs + shape.horizonExtraMs,
    logSegmentBytes: shape.segmentRecords * TIMER_RECORD_BYTES,
  };
  return config as TimerStoreConfig;
}

function deliverAt(
  op: { kind: number; u: number; k: number },
  c: TimerStoreConfig,
  now: number,
  readTimeMs: number,
  previousMs: number,
) {
  const { precisionMs: p, coarsePrecisionMs: C, fineWindowMs: W, horizonMs: H } = c;
  const near = now + Math.floor(op.u * H);
  const raw = [
    near,
    Math.ceil(near / p) * p + op.k,
    readTimeMs + W + op.k,
    Math.ceil(near / C) * C + op.k,
    now + H - Math.abs(op.k),
    now - Math.floor(op.u * 3 * p),
    previousMs + op.k,
    previousMs + op.k,
    now + p + op.k,
  ][op.kind];
  return Math.max(0, Math.min(raw, now + H));
}

Deno.test("TimerStore fires every timer once, never early, within one slot of its time", async () => {
  await fc.assert(
    fc.asyncProperty(
      shapeArb,
      fc.array(opArb, { minLength: 1, maxLength: 150 }),
      async (shape, ops) => {
        const config = configOf(shape);
        const p = config.precisionMs;
        const store = await TimerStore.open({
          files: new SimDisk(),
          dir: "/t",
          nowMs: shape.startMs,
          config,
        });
        const due = new Map<number, { deliverMs: number; slotMs: number }>();
        const fired = new Map<number, number>();
        let now = shape.startMs;
        let prevNow = now;
        let nextOffset = 0;
        let previousMs = now;

        const advanceTo = async (to: number) => {
          const entries: TimerEntry[] = [];
          for (;;) {
            const result = store.advance(to);
            entries.push(...result.entries);
            if (result.status === "caught-up") break;
            if (result.status === "checkpoint-needed") await store.checkpoint(0);
          }
          for (const e of entries) {
            const expected = due.get(e.commitLogOffset)!;
            assert.ok(e.deliverMs <= to && e.deliverMs <= store.readTimeMs, "fired early");
            assert.ok(expected.slotMs <= to, "fired before its slot");
            assert.ok(expected.slotMs > prevNow, "not fired by the first advance() past its slot");
            fired.set(e.commitLogOffset, (fired.get(e.commitLogOffset) ?? 0) + 1);
          }
          prevNow = to;
        };

        for (const op of ops) {
          if (op.op === "add") {
            const readTimeMs = store.readTimeMs;
            const deliverMs = deliverAt(op, config, now, readTimeMs, previousMs);
            previousMs = deliverMs;
            // Its slot; a timer already due at readTime goes to the next slot.
            const slotMs = Math.max(Math.ceil(deliverMs / p) * p, readTimeMs + p);
            assert.ok(slotMs - deliverMs < p || deliverMs <= readTimeMs);
            due.set(nextOffset, { deliverMs, slotMs });
            store.add({ deliverMs, commitLogOffset: nextOffset++, msgSize: 1 }, now);
          } else {
            now += op.big
              ? 1 + Math.floor(op.u * config.fineWindowMs * 1.5)
              : 1 + Math.floor(op.u * 3 * p);
            await advanceTo(now);
          }
        }
        await advanceTo(now + config.horizonMs + p);
        assert.equal(fired.size, due.size, "every timer fired");
        assert.ok([...fired.values()].every((n) => n === 1), "each exactly once");
        assert.equal(store.pendingCount, 0);
        await store.close();
      },
    ),
    { numRuns: 200 },
  );
});
