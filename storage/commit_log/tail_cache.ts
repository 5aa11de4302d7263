// The newest CommitLog bytes, kept in memory so that a consumer at the tail (the common case:
// long-polling pulls, webhook pushes, replicas keeping up) reads without a syscall. RocketMQ
// reads such bytes from its mmap'ed segments, which the page cache holds; a pread per
// record from JavaScript costs more than the rest of a pull's per-message work
// (bench/README.md, "bench/storage/commit_log_bench.ts"). A ring of `capacity` bytes holding log bytes [start, end), where end is
// the written end: every written batch is copied in, and a jump (the next segment after a
// BLANK, a truncation, recovery) starts it afresh.

export class TailCache {
  readonly capacity: number;
  #ring: Uint8Array | undefined; // allocated on the first append
  #start = 0;
  #end = 0;

  constructor(capacity: number) {
    this.capacity = Math.max(0, Math.floor(capacity));
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
    const ring = this.#ring ??= new Uint8Array(cap);
    const pos = at % cap;
    const first = Math.min(src.length, cap - pos);
    ring.set(src.subarray(0, first), pos);
    if (first < src.length) ring.set(src.subarray(first), 0);
    this.#end = offset + bytes.length;
    this.#start = Math.max(this.#start, this.#end - cap);
  }

  holds(offset: number, size: number): boolean {
    return this.#ring !== undefined && offset >= this.#start && size >= 0 &&
      offset + size <= this.#end;
  }

  /** Copies log bytes [offset, offset + out.length) into `out`; false when not all held. */
  readInto(offset: number, out: Uint8Array): boolean {
    const size = out.length;
    if (!this.holds(offset, size)) return false;
    const ring = this.#ring!, cap = this.capacity;
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
