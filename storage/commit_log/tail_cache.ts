// The newest CommitLog bytes, kept in memory so that a consumer at the tail (the common case:
// long-polling pulls, webhook pushes, replicas keeping up) reads without a syscall. RocketMQ
// reads such bytes from its mmap'ed segments, which the page cache holds; a pread per
// record from JavaScript costs more than the rest of a pull's per-message work
// (bench/README.md, "bench/storage/commit_log_bench.ts"). A ring of `capacity` bytes holding log bytes [start, end), where end is
// the written end: every written batch is copied in, and a jump (the next segment after a
// BLANK, a truncation, recovery) starts it afresh. The ring grows as it fills, doubling
// from RING_BYTES_MIN up to `capacity`, and holds what a full-size ring would: an idle
// broker does not hold a 16 MiB array for its first message (on Bun such an array was
// sometimes touched whole: bench/README.md "Round 5 (branch idle)").

/** The ring's first size. */
const RING_BYTES_MIN = 64 * 1024;

export class TailCache {
  readonly capacity: number;
  #ring: Uint8Array | undefined; // allocated on the first append, grown as it fills
  #start = 0;
  #end = 0;

  constructor(capacity: number) {
    this.capacity = Math.max(0, Math.floor(capacity));
  }

  /** Bytes the ring takes now (0 before the first append). */
  get ringBytes(): number {
    return this.#ring?.length ?? 0;
  }

  /** [start, end): the log offsets held. */
  get start(): number {
    return this.#start;
  }
  get end(): number {
    return this.#end;
  }

  /** Holds nothing; the next append may start anywhere. */
  reset(offset: number): void {
    this.#start = this.#end = offset;
  }

  /** Bytes written at log offset `offset`: continues the ring, or restarts it elsewhere. */
  append(offset: number, bytes: Uint8Array): void {
    const cap = this.capacity;
    if (cap === 0) return;
    if (offset !== this.#end) this.reset(offset);
    let src = bytes;
    let at = offset;
    if (src.length > cap) {
      // Only the last `cap` bytes can be held.
      at = offset + src.length - cap;
      src = src.subarray(src.length - cap);
    }
    const end = offset + bytes.length;
    const held = end - Math.max(this.#start, end - cap);
    if (this.#ring === undefined || (held > this.#ring.length && this.#ring.length < cap)) {
      this.#grow(held);
    }
    const ring = this.#ring!;
    place(ring, at, src);
    this.#end = end;
    this.#start = Math.max(this.#start, end - ring.length);
  }

  /** A ring of at least `bytes` (up to capacity), holding what the old one held. */
  #grow(bytes: number): void {
    const old = this.#ring;
    let size = old?.length ?? Math.min(RING_BYTES_MIN, this.capacity);
    while (size < bytes && size < this.capacity) size = Math.min(size * 2, this.capacity);
    const ring = new Uint8Array(size);
    if (old && this.#end > this.#start) {
      const kept = new Uint8Array(this.#end - this.#start);
      this.readInto(this.#start, kept);
      place(ring, this.#start, kept);
    }
    this.#ring = ring;
  }

  holds(offset: number, size: number): boolean {
    return this.#ring !== undefined && offset >= this.#start && size >= 0 &&
      offset + size <= this.#end;
  }

  /** Copies log bytes [offset, offset + out.length) into `out`; false when not all held. */
  readInto(offset: number, out: Uint8Array): boolean {
    const size = out.length;
    if (!this.holds(offset, size)) return false;
    const ring = this.#ring!, cap = ring.length;
    const pos = offset % cap;
    if (pos + size <= cap) {
      out.set(ring.subarray(pos, pos + size));
    } else {
      const first = cap - pos;
      out.set(ring.subarray(pos), 0);
      out.set(ring.subarray(0, size - first), first);
    }
    return true;
  }
}

/** Copies `src` (at most the ring's size) into `ring` where log offset `at` goes. */
function place(ring: Uint8Array, at: number, src: Uint8Array): void {
  const pos = at % ring.length;
  const first = Math.min(src.length, ring.length - pos);
  ring.set(src.subarray(0, first), pos);
  if (first < src.length) ring.set(src.subarray(first), 0);
}
