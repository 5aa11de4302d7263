// The tail cache grows its ring as it fills and must hold exactly what a full-size ring
// holds: the newest `capacity` bytes of the current run, read back byte for byte.
import assert from "node:assert/strict";
import { TailCache } from "./tail_cache.ts";

/** What a ring of `capacity` holds: the last `capacity` bytes since the last jump. */
class Reference {
  bytes: number[] = [];
  start = 0;
  constructor(readonly capacity: number) {}
  append(offset: number, src: Uint8Array) {
    if (offset !== this.start + this.bytes.length) {
      this.start = offset;
      this.bytes = [];
    }
    for (const b of src) this.bytes.push(b);
    const over = this.bytes.length - this.capacity;
    if (over > 0) {
      this.bytes.splice(0, over);
      this.start += over;
    }
  }
}

Deno.test("TailCache: a growing ring holds what a full-size ring holds", () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (const capacity of [1, 1000, 70_000, 200_001]) {
    const cache = new TailCache(capacity);
    const ref = new Reference(capacity);
    let offset = 0;
    for (let step = 0; step < 150; step++) {
      if (random() < 0.05) offset += 1 + Math.floor(random() * 5000); // a jump
      const n = Math.floor(random() * (random() < 0.1 ? 2 * capacity + 10 : 9000));
      const src = new Uint8Array(n).map((_, i) => (offset + i) * 31 % 251);
      cache.append(offset, src);
      ref.append(offset, src);
      offset += n;
      assert.equal(cache.end, ref.start + ref.bytes.length, `end, capacity ${capacity}`);
      assert.equal(cache.start, ref.start, `start, capacity ${capacity} step ${step}`);
      const size = ref.bytes.length;
      const out = new Uint8Array(size);
      if (size > 0) assert.ok(cache.readInto(ref.start, out), `held, capacity ${capacity}`);
      assert.deepEqual([...out], ref.bytes);
      assert.equal(cache.readInto(ref.start - 1, new Uint8Array(1)), false, "nothing before");
    }
  }
});

Deno.test("TailCache: the first append does not allocate the whole capacity", () => {
  const cache = new TailCache(16 * 1024 * 1024);
  cache.append(0, new Uint8Array(100).fill(9));
  assert.equal(cache.ringBytes, 64 * 1024);
  cache.append(100, new Uint8Array(100_000));
  assert.equal(cache.ringBytes, 128 * 1024, "doubled when it filled");
});
