// The CommitLog's write buffer: a tick's appends are encoded into it and written with one
// writeAt, then it is reused. It starts empty, takes WRITE_BUFFER_BYTES_MIN on the first
// append and doubles as a tick needs, up to `max` (writeBatchBytesMax): Bun makes every byte
// of a new buffer resident (a bare 1 MiB Uint8Array: +1.1 MiB of RSS; bench/README.md,
// "Round 6 … idle RSS").

/** The first size. */
export const WRITE_BUFFER_BYTES_MIN = 64 * 1024;

export class WriteBuffer {
  bytes = new Uint8Array(0);
  view = new DataView(this.bytes.buffer);

  constructor(readonly max: number) {}

  /** Makes [0, end) fit (end ≤ max), keeping the bytes in [0, keep). */
  ensure(end: number, keep: number): void {
    if (end <= this.bytes.length) return;
    let size = Math.max(this.bytes.length, Math.min(WRITE_BUFFER_BYTES_MIN, this.max));
    while (size < end) size = Math.min(size * 2, this.max);
    const grown = new Uint8Array(size);
    if (keep > 0) grown.set(this.bytes.subarray(0, keep));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }
}
