// HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, the frame types and flags this
// transport uses, and a reader that cuts a byte stream into frames.
import { Buffer } from "node:buffer";

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
export const HEADER_BYTES = 9;

export const Type = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** RFC 9113 §7 error codes. */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** A frame's bytes: header then payload. */
export function frame(type: number, flags: number, stream: number, payload?: Uint8Array): Buffer {
  const n = payload?.length ?? 0;
  const out = Buffer.allocUnsafe(HEADER_BYTES + n);
  writeHeader(out, 0, n, type, flags, stream);
  if (payload) out.set(payload, HEADER_BYTES);
  return out;
}

/** A GOAWAY frame's payload: the last stream we take, the code, a short debug text. */
export function goawayPayload(lastStream: number, code: number, debug: string): Buffer {
  const text = Buffer.from(debug.slice(0, 200));
  const p = Buffer.alloc(8 + text.length);
  p.writeUInt32BE(lastStream, 0);
  p.writeUInt32BE(code, 4);
  p.set(text, 8);
  return p;
}

/** A SETTINGS frame's payload: 6 bytes per (identifier, value). */
export function settingsPayload(pairs: [number, number][]): Buffer {
  const out = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([id, v], i) => {
    out.writeUInt16BE(id, i * 6);
    out.writeUInt32BE(v, i * 6 + 2);
  });
  return out;
}

export function writeHeader(
  out: Uint8Array,
  at: number,
  length: number,
  type: number,
  flags: number,
  stream: number,
) {
  out[at] = length >>> 16;
  out[at + 1] = (length >>> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out[at + 5] = (stream >>> 24) & 0x7f;
  out[at + 6] = (stream >>> 16) & 0xff;
  out[at + 7] = (stream >>> 8) & 0xff;
  out[at + 8] = stream & 0xff;
}

export class FrameError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** Cuts bytes into frames; checks the preface first and each frame's size. */
export class FrameReader {
  #buf: Buffer = Buffer.alloc(0);
  #preface = true;

  constructor(private readonly maxFrameBytes: number) {}

  /** The complete frames in what came so far; throws FrameError on a bad preface or size. */
  push(chunk: Buffer, out: Frame[]) {
    let buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    let at = 0;
    if (this.#preface) {
      const n = Math.min(buf.length, PREFACE.length);
      if (!buf.subarray(0, n).equals(PREFACE.subarray(0, n))) {
        throw new FrameError(ErrorCode.PROTOCOL_ERROR, "not an HTTP/2 connection preface");
      }
      if (n < PREFACE.length) {
        this.#buf = buf;
        return;
      }
      this.#preface = false;
      at = PREFACE.length;
    }
    while (buf.length - at >= HEADER_BYTES) {
      const length = (buf[at] << 16) | (buf[at + 1] << 8) | buf[at + 2];
      if (length > this.maxFrameBytes) {
        throw new FrameError(ErrorCode.FRAME_SIZE_ERROR, `frame of ${length} bytes`);
      }
      if (buf.length - at < HEADER_BYTES + length) break;
      out.push({
        type: buf[at + 3],
        flags: buf[at + 4],
        stream: buf.readUInt32BE(at + 5) & 0x7fffffff,
        payload: buf.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length),
      });
      at += HEADER_BYTES + length;
    }
    if (at < buf.length) buf = Buffer.from(buf.subarray(at));
    else buf = Buffer.alloc(0);
    this.#buf = buf;
  }
}
