import assert from "node:assert/strict";
import { IdleGc, type IdleGcOptions } from "./idle_gc.ts";

/** An IdleGc on a hand-driven clock and CPU meter: `spend(ms)` uses CPU, `tick()` ends a
 * window of 1,000 ms (idle under 2%: 20 ms of CPU). */
function rig({ collectCpuMs = 25, ...o }: Partial<IdleGcOptions> & { collectCpuMs?: number } = {}) {
  let cpuUs = 0;
  let now = 0;
  const collected: number[] = [];
  const gc = new IdleGc({
    windowMs: 1000,
    intervalMs: 60_000,
    cpuPercent: 2,
    collect: () => {
      collected.push(now);
      cpuUs += collectCpuMs * 1000; // a collection's own CPU
      now += 25;
    },
    cpuMicros: () => cpuUs,
    nowMs: () => now,
    every: () => ({ stop: () => {} }),
    ...o,
  });
  gc.start();
  const spend = (ms: number) => (cpuUs += ms * 1000);
  const window = (cpuMs: number) => {
    spend(cpuMs);
    now += 1000;
    gc.tick();
  };
  return { gc, collected, window };
}

Deno.test("idle gc: collects after start-up once a window is idle, then waits for work", () => {
  const { gc, collected, window } = rig();
  window(19); // under 2% of the window: idle, and start-up counts as work
  assert.deepEqual(collected, [1000]);
  assert.equal(gc.collections, 1);
  assert.equal(gc.lastMs, 25);
  for (let i = 0; i < 200; i++) window(0); // idle for minutes: nothing new to give back
  assert.equal(gc.collections, 1);
});

Deno.test("idle gc: a busy window re-arms it, no sooner than the interval", () => {
  const { collected, window } = rig();
  window(0); // collects at 1,000
  window(0); // settling
  window(500); // work
  window(0); // idle again, but within the interval
  assert.equal(collected.length, 1);
  for (let i = 0; i < 60; i++) window(0);
  assert.equal(collected.length, 2);
  assert.ok(collected[1] - collected[0] >= 60_000, String(collected));
});

Deno.test("idle gc: a window at the threshold is busy", () => {
  const { collected, window } = rig({ intervalMs: 0 });
  window(20); // exactly 2%: busy
  assert.equal(collected.length, 0);
  window(0);
  assert.equal(collected.length, 1);
});

Deno.test("idle gc: the collection's own CPU is not work", () => {
  // A collection that used 150 ms of CPU: more than the settling window lets pass as
  // sweeping (5 × 20 ms), so counted against it, it would re-arm the collector.
  const { collected, window } = rig({ intervalMs: 0, collectCpuMs: 150 });
  window(0); // collects
  window(0); // settling
  window(0);
  window(0);
  assert.equal(collected.length, 1);
});

Deno.test("idle gc: the window after a collection (V8's helper threads sweeping) is not work", () => {
  const { collected, window } = rig({ intervalMs: 0 });
  window(0); // collects
  window(30); // the collection's aftermath on other threads
  window(0);
  window(0);
  assert.equal(collected.length, 1);
  window(30); // real work re-arms it
  window(0);
  assert.equal(collected.length, 2);
});

Deno.test("idle gc: traffic in the window after a collection still re-arms it", () => {
  const { collected, window } = rig({ intervalMs: 0 });
  window(0); // collects
  window(300); // settling, but 30% of a core is traffic, not sweeping
  window(0); // settles; idle
  window(0);
  assert.equal(collected.length, 2);
});

Deno.test("idle gc: windowMs 0 never starts", () => {
  let started = 0;
  const { gc } = rig({
    windowMs: 0,
    every: () => (started++, { stop: () => {} }),
  });
  assert.equal(started, 0);
  gc.stop();
});
