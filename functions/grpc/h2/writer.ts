// What a lean HTTP/2 connection sends: frames gathered during a turn of the event loop and
// written to the socket in one write (many streams' replies per syscall). A client that does
// not read what it is sent is not read from either: past `bufferBytes` waiting in the socket,
// reading stops until the socket drains (PINGs, SETTINGS or requests answered into a socket
// nobody reads would otherwise pile up in memory without end).
import { Buffer } from "node:buffer";
import { Flag, frame, HEADER_BYTES, Type, writeHeader } from "./frames.ts";

export interface Socketish {
  write(b: Uint8Array): unknown;
  end(): unknown;
  destroy?(): unknown;
  /** Bytes written and not yet taken by the kernel (node:net). */
  readonly writableLength?: number;
  pause?(): unknown;
  resume?(): unknown;
  once?(event: "drain" | "close", listener: () => void): unknown;
}

export class FrameWriter {
  #out: Uint8Array[] = [];
  #queued = false;
  #ended = false;
  #paused = false;

  constructor(private readonly socket: Socketish, private readonly bufferBytes: number) {}

  /** Whether reading is stopped until the socket drains. */
  get paused(): boolean {
    return this.#paused;
  }

  send(bytes: Uint8Array) {
    if (this.#ended) return;
    this.#out.push(bytes);
    if (!this.#queued) {
      this.#queued = true;
      setImmediate(() => this.flush());
    }
  }

  headers(stream: number, block: Uint8Array, end: boolean) {
    const out = Buffer.allocUnsafe(HEADER_BYTES + block.length);
    const flags = Flag.END_HEADERS | (end ? Flag.END_STREAM : 0);
    writeHeader(out, 0, block.length, Type.HEADERS, flags, stream);
    out.set(block, HEADER_BYTES);
    this.send(out);
  }

  /** A DATA frame (never END_STREAM: gRPC ends streams with trailers). */
  data(stream: number, pieces: Uint8Array[], length: number) {
    const head = Buffer.allocUnsafe(HEADER_BYTES);
    writeHeader(head, 0, length, Type.DATA, 0, stream);
    this.send(head);
    for (const p of pieces) this.send(p);
  }

  rst(stream: number, code: number) {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(code, 0);
    this.send(frame(Type.RST_STREAM, 0, stream, p));
  }

  windowUpdate(stream: number, inc: number) {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(inc, 0);
    this.send(frame(Type.WINDOW_UPDATE, 0, stream, p));
  }

  flush() {
    this.#queued = false;
    if (this.#out.length === 0 || this.#ended) return;
    const out = this.#out.length === 1 ? this.#out[0] : Buffer.concat(this.#out);
    this.#out = [];
    const sock = this.socket;
    if (sock.write(out) !== false || this.#paused) return;
    if ((sock.writableLength ?? 0) <= this.bufferBytes || !sock.pause || !sock.once) return;
    this.#paused = true;
    sock.pause();
    sock.once("drain", () => {
      this.#paused = false;
      if (!this.#ended) sock.resume?.();
    });
  }

  /** Writes what is queued and ends the socket; later sends are dropped. A client that
   * does not close its side within `graceMs` is cut off (its socket would stay open). */
  end(graceMs: number) {
    if (this.#ended) return;
    this.flush();
    this.#ended = true;
    const sock = this.socket;
    sock.end();
    if (!sock.destroy) return;
    const t = setTimeout(() => sock.destroy?.(), graceMs);
    (t as { unref?: () => void }).unref?.();
    sock.once?.("close", () => clearTimeout(t));
  }
}
