// A request's header block on a lean connection (RFC 9113 §4.3, §6.2, §6.10): a HEADERS
// frame (padding and priority taken off) and its CONTINUATION frames, bounded in size and
// in frame count, decoded through the connection's HPACK table (hpack.ts) once complete.
import { Buffer } from "node:buffer";
import { ErrorCode, Flag, type Frame, FrameError, HEADER_BYTES } from "./frames.ts";
import { HeaderDecoder } from "./hpack.ts";

export interface HeaderBlock {
  stream: number;
  flags: number;
  headers: Map<string, string>;
}

export class HeaderBlocks {
  #decoder: HeaderDecoder;
  #open: { stream: number; flags: number; parts: Buffer[]; bytes: number } | undefined;

  constructor(private readonly bytesMax: number) {
    this.#decoder = new HeaderDecoder(4096, bytesMax);
  }

  /** A block is open: only its CONTINUATION frames may come next. */
  get open(): boolean {
    return this.#open !== undefined;
  }

  /** A HEADERS frame: the decoded block when it ends here. */
  headers(f: Frame): HeaderBlock | undefined {
    let p = f.payload;
    let pad = 0;
    if (f.flags & Flag.PADDED) {
      if (p.length < 1) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "padding");
      pad = p[0];
      p = p.subarray(1);
    }
    if (f.flags & Flag.PRIORITY) {
      if (p.length < 5) throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, "priority");
      p = p.subarray(5);
    }
    if (pad > p.length) throw new FrameError(ErrorCode.PROTOCOL_ERROR, "padding");
    p = p.subarray(0, p.length - pad);
    this.#open = { stream: f.stream, flags: f.flags, parts: [p], bytes: p.length };
    return f.flags & Flag.END_HEADERS ? this.#done() : undefined;
  }

  /** A CONTINUATION frame: the decoded block when it ends here. */
  continuation(f: Frame): HeaderBlock | undefined {
    const b = this.#open;
    if (!b || b.stream !== f.stream) {
      throw new FrameError(ErrorCode.PROTOCOL_ERROR, "CONTINUATION without HEADERS");
    }
    b.parts.push(f.payload);
    // Each frame counts its 9-byte header too: empty CONTINUATION frames without end
    // (the "CONTINUATION flood") reach the limit instead of growing `parts` for ever.
    b.bytes += HEADER_BYTES + f.payload.length;
    if (b.bytes > this.bytesMax) {
      throw new FrameError(ErrorCode.ENHANCE_YOUR_CALM, "header block too large");
    }
    return f.flags & Flag.END_HEADERS ? this.#done() : undefined;
  }

  #done(): HeaderBlock {
    const b = this.#open!;
    this.#open = undefined;
    const block = b.parts.length === 1 ? b.parts[0] : Buffer.concat(b.parts);
    try {
      return { stream: b.stream, flags: b.flags, headers: this.#decoder.decode(block) };
    } catch (err) {
      // The decoder's table may be out of step with the client's: the connection ends.
      throw new FrameError(ErrorCode.COMPRESSION_ERROR, String((err as Error).message));
    }
  }
}
