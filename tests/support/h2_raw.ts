// A raw HTTP/2 client for tests of the lean gRPC transport: frames written as given (so a
// test can send what no well-behaved client would), frames read back and their header
// blocks decoded. Over node:net, prior knowledge (h2c), as gRPC clients connect.
import { Buffer } from "node:buffer";
import net from "node:net";
import {
  type Frame,
  frame,
  FrameReader,
  HEADER_BYTES,
  PREFACE,
  Type,
} from "../../functions/grpc/h2/frames.ts";
import { HeaderDecoder } from "../../functions/grpc/h2/hpack.ts";

export const SERVICE = "/apache.rocketmq.v2.MessagingService/";

/** An HPACK string or integer with a `bits`-bit prefix (RFC 7541 §5.1), no Huffman. */
export function hpackInt(first: number, bits: number, n: number): Buffer {
  const max = (1 << bits) - 1;
  if (n < max) return Buffer.from([first | n]);
  const out = [first | max];
  for (n -= max; n >= 128; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return Buffer.from(out);
}

/** A literal header field: without indexing (0x00) or with incremental indexing (0x40). */
export function literal(name: string, value: string, index = false): Buffer {
  const n = Buffer.from(name), v = Buffer.from(value);
  return Buffer.concat([
    Buffer.from([index ? 0x40 : 0x00]),
    hpackInt(0, 7, n.length),
    n,
    hpackInt(0, 7, v.length),
    v,
  ]);
}

/** A gRPC request's header block for `rpc` (POST, http, the path; extra literals after). */
export function requestBlock(rpc: string, extra: [string, string][] = []): Buffer {
  return Buffer.concat([
    Buffer.from([0x83, 0x86]), // :method POST, :scheme http (static table)
    literal(":path", SERVICE + rpc),
    literal("content-type", "application/grpc"),
    literal("te", "trailers"),
    ...extra.map(([n, v]) => literal(n, v)),
  ]);
}

/** A gRPC length-prefixed message. */
export function grpcMessage(bytes: Uint8Array, compressed = false): Buffer {
  const p = Buffer.alloc(5);
  p[0] = compressed ? 1 : 0;
  p.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([p, bytes]);
}

export interface ReadFrame extends Frame {
  /** A HEADERS frame's decoded block (one frame, END_HEADERS: what the server sends). */
  headers?: Map<string, string>;
}

export class RawH2 {
  readonly frames: ReadFrame[] = [];
  closed = false;
  #reader = new FrameReader(1 << 24);
  #decoder = new HeaderDecoder(4096, 1 << 20);
  #waiters = new Set<() => void>();

  private constructor(readonly socket: net.Socket, answerPings: boolean) {
    this.#reader.push(PREFACE, []);
    socket.on("data", (chunk: Buffer) => {
      const out: Frame[] = [];
      this.#reader.push(chunk, out);
      for (const f of out) {
        const r: ReadFrame = f;
        if (f.type === Type.HEADERS) r.headers = this.#decoder.decode(f.payload);
        if (f.type === Type.PING && !(f.flags & 1) && answerPings) {
          this.send(frame(Type.PING, 1, 0, f.payload)); // as HTTP/2 clients do
        }
        this.frames.push(r);
      }
      this.#wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.#wake();
    });
    socket.on("error", () => {});
  }

  /** Connects to host:port; with `hello` the preface and an empty SETTINGS go first. PINGs
   * are answered unless `answerPings` is false (a peer that vanished). */
  static connect(address: string, hello = true, answerPings = true): Promise<RawH2> {
    const at = address.lastIndexOf(":");
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(address.slice(at + 1)), address.slice(0, at), () => {
        const c = new RawH2(socket, answerPings);
        if (hello) c.send(PREFACE, frame(Type.SETTINGS, 0, 0));
        resolve(c);
      });
      socket.once("error", reject);
    });
  }

  send(...parts: Uint8Array[]): boolean {
    return this.socket.write(Buffer.concat(parts));
  }

  /** HEADERS (END_HEADERS, END_STREAM when `end`) on `stream`. */
  headers(stream: number, block: Uint8Array, end: boolean): Buffer {
    return frame(Type.HEADERS, 0x4 | (end ? 0x1 : 0), stream, block);
  }

  /** DATA frames of at most 16 KiB each carrying `bytes`; END_STREAM on the last when `end`. */
  data(stream: number, bytes: Uint8Array, end: boolean): Buffer {
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length || out.length === 0; at += 16_384) {
      const part = bytes.subarray(at, at + 16_384);
      const last = at + 16_384 >= bytes.length;
      out.push(frame(Type.DATA, end && last ? 0x1 : 0, stream, part));
    }
    return Buffer.concat(out);
  }

  /** The first frame (already read or to come) that `match` takes, or undefined after `ms`. */
  async waitFor(match: (f: ReadFrame) => boolean, ms: number): Promise<ReadFrame | undefined> {
    const until = Date.now() + ms;
    for (;;) {
      const hit = this.frames.find(match);
      if (hit || this.closed || Date.now() >= until) return hit;
      await new Promise<void>((r) => {
        const t = setTimeout(done, until - Date.now());
        function done() {
          clearTimeout(t);
          r();
        }
        this.#waiters.add(done);
      });
    }
  }

  /** Waits until the server closes the connection; whether it did within `ms`. */
  async waitClosed(ms: number): Promise<boolean> {
    await this.waitFor(() => false, ms);
    return this.closed;
  }

  /** The status trailers (or trailers-only headers) of `stream` within `ms`. */
  async status(stream: number, ms = 5000): Promise<{ code: number; message: string }> {
    const f = await this.waitFor(
      (f) => f.type === Type.HEADERS && f.stream === stream && f.headers!.has("grpc-status"),
      ms,
    );
    if (!f) throw new Error(`no status on stream ${stream} within ${ms} ms`);
    return {
      code: Number(f.headers!.get("grpc-status")),
      message: decodeURIComponent(f.headers!.get("grpc-message") ?? ""),
    };
  }

  close() {
    this.socket.destroy();
    this.#wake();
  }

  #wake() {
    const ws = [...this.#waiters];
    this.#waiters.clear();
    for (const w of ws) w();
  }
}

export { frame, HEADER_BYTES, Type };
