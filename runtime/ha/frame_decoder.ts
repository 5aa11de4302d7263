// FrameDecoder: cuts a TCP byte stream into whole frames for decodeFrame (frame_codec.ts),
// holding the bytes of a frame that spans chunks; its own module as stream state, not layout.
import { decodeFrame } from "./frame_codec.ts";
import { type Frame, FRAME_HEADER_BYTES, FrameError, HA_FRAME_BYTES_MAX } from "./frame_types.ts";

/**
 * Frames a TCP byte stream: push() each chunk as it arrives and get the frames it
 * completes, in order (a frame may span chunks; a chunk may hold several). A malformed
 * frame throws a FrameError, and so does every later push: the stream has lost its framing
 * and the connection must be closed. An oversize length is refused as soon as its 4 bytes
 * arrive, before anything is buffered for it.
 */
export class FrameDecoder {
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  #failure: FrameError | undefined;

  constructor(readonly frameBytesMax = HA_FRAME_BYTES_MAX) {}

  /** Bytes received but not yet part of a whole frame. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): Frame[] {
    const frames: Frame[] = [];
    this.pushEach(chunk, (frame) => frames.push(frame));
    return frames;
  }

  /** As push(), but hands each frame over as it is decoded: the frames before a malformed
   * one are delivered before the error is thrown. */
  pushEach(chunk: Uint8Array, onFrame: (frame: Frame) => void): void {
    if (this.#failure) throw this.#failure;
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    try {
      for (;;) {
        if (this.#buffered < 4) break;
        const head = this.#peek(4);
        const length = new DataView(head.buffer, head.byteOffset, 4).getUint32(0);
        if (4 + length > this.frameBytesMax) {
          throw new FrameError(
            "FRAME_TOO_LARGE",
            `Cannot accept a replication frame of ${
              4 + length
            } bytes as it exceeds frameBytesMax ${this.frameBytesMax}`,
          );
        }
        if (length < FRAME_HEADER_BYTES - 4) {
          throw new FrameError(
            "FRAME_LENGTH_ILLEGAL",
            `Cannot read a replication frame of length ${length}: the header alone is 5`,
          );
        }
        if (this.#buffered < 4 + length) break;
        const frame = decodeFrame(this.#take(4 + length));
        onFrame(frame);
      }
    } catch (err) {
      if (!(err instanceof FrameError)) throw err;
      this.#failure = err;
      this.#chunks = [];
      this.#buffered = 0;
      throw err;
    }
  }

  /** The first n buffered bytes (a view into the first chunk when it holds them all: a
   * socket's chunks are Buffers, views into a shared pool, so mind byteOffset). */
  #peek(n: number): Uint8Array {
    const first = this.#chunks[0];
    if (first.length >= n) return first.subarray(0, n);
    const out = new Uint8Array(n);
    let at = 0;
    for (const c of this.#chunks) {
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (at === n) break;
    }
    return out;
  }

  /** Removes and returns the first n buffered bytes (no copy within one chunk). */
  #take(n: number): Uint8Array {
    const first = this.#chunks[0];
    let out: Uint8Array;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
    } else {
      out = new Uint8Array(n);
      let at = 0;
      while (at < n) {
        const c = this.#chunks[0];
        const k = Math.min(c.length, n - at);
        out.set(c.subarray(0, k), at);
        at += k;
        if (k === c.length) this.#chunks.shift();
        else this.#chunks[0] = c.subarray(k);
      }
    }
    this.#buffered -= n;
    return out;
  }
}
