// SettledHandles against a plain model (a Map over a ring of the same capacity): every
// handle it answers for must be the model's, through evictions, deletes (backward shift)
// and a table small enough for long probe runs.
import assert from "node:assert/strict";
import { SettledHandles, type SettledHow } from "./settled_handles.ts";

/** A seeded generator, so a failure repeats. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Handles as the broker makes them: a fixed prefix, then a counter (many share words). */
const handle = (n: number) =>
  "7F0000010A2B00000000" + n.toString(16).toUpperCase().padStart(12, "0");

class Model {
  ring: ({ h: string; group: string; how: SettledHow } | null)[];
  at = new Map<string, number>();
  next = 0;
  constructor(readonly capacity: number) {
    this.ring = Array(capacity).fill(null);
  }
  set(h: string, group: string, how: SettledHow) {
    this.delete(h);
    const old = this.ring[this.next];
    if (old) this.at.delete(old.h);
    this.ring[this.next] = { h, group, how };
    this.at.set(h, this.next);
    this.next = (this.next + 1) % this.capacity;
  }
  delete(h: string) {
    const i = this.at.get(h);
    if (i === undefined) return;
    this.ring[i] = null;
    this.at.delete(h);
  }
  get(h: string) {
    const i = this.at.get(h);
    return i === undefined ? undefined : { group: this.ring[i]!.group, how: this.ring[i]!.how };
  }
}

Deno.test("SettledHandles: answers as a Map over a ring would, through evictions and deletes", () => {
  for (const capacity of [1, 3, 17, 500]) {
    const random = prng(capacity);
    const set = new SettledHandles(capacity);
    const model = new Model(capacity);
    const universe = capacity * 3;
    for (let step = 0; step < 20_000; step++) {
      const h = handle(Math.floor(random() * universe));
      const r = random();
      if (r < 0.6) {
        const group = `g${Math.floor(random() * 4)}`;
        const how = random() < 0.5 ? "acked" : "revived";
        set.set(h, group, how);
        model.set(h, group, how);
      } else if (r < 0.75) {
        set.delete(h);
        model.delete(h);
      } else {
        assert.deepEqual(set.get(h), model.get(h), `capacity ${capacity}, step ${step}, ${h}`);
        assert.equal(set.has(h), model.get(h) !== undefined);
      }
      assert.equal(set.size, model.at.size);
    }
    for (let n = 0; n < universe; n++) assert.deepEqual(set.get(handle(n)), model.get(handle(n)));
  }
});

Deno.test("SettledHandles: the oldest handle goes once the ring is full", () => {
  const set = new SettledHandles(2);
  set.set(handle(1), "g", "acked");
  set.set(handle(2), "g", "revived");
  set.set(handle(3), "g", "acked");
  assert.equal(set.get(handle(1)), undefined);
  assert.deepEqual(set.get(handle(2)), { group: "g", how: "revived" });
  assert.deepEqual(set.get(handle(3)), { group: "g", how: "acked" });
  assert.equal(set.size, 2);
});

Deno.test("SettledHandles: hex case does not matter; anything but 32 hex digits is never kept", () => {
  const set = new SettledHandles(10);
  set.set("abcdef0123456789ABCDEF0123456789", "g", "acked");
  assert.deepEqual(set.get("ABCDEF0123456789abcdef0123456789"), { group: "g", how: "acked" });
  for (const bad of ["", "xyz", "ABCDEF0123456789ABCDEF012345678G", "A".repeat(33)]) {
    set.set(bad, "g", "acked");
    assert.equal(set.get(bad), undefined);
  }
  assert.equal(set.size, 1);
});

Deno.test("SettledHandles: group names of handles still remembered survive a compaction", () => {
  const set = new SettledHandles(5000);
  set.set(handle(0), "kept", "acked");
  for (let n = 1; n <= 3000; n++) set.set(handle(n), `group-${n}`, "revived");
  assert.deepEqual(set.get(handle(0)), { group: "kept", how: "acked" });
  assert.deepEqual(set.get(handle(1)), { group: "group-1", how: "revived" });
  assert.deepEqual(set.get(handle(3000)), { group: "group-3000", how: "revived" });
});
