// A gRPC call on a lean stream, shaped as the grpc-js server call objects the RPC modules
// use (request, metadata, write, end, cancelled, getDeadline, the events "data", "end",
// "cancelled", "error", "close"), so one set of handlers serves both transports.
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import type { Inbound } from "./limits.ts";
import type { H2Stream } from "./stream.ts";
import { GrpcStatus } from "../status.ts";

/** The longest delay setTimeout takes (larger ones fire at once). */
const TIMER_MS_MAX = 0x7fffffff;

/** grpc-timeout ("100m", "5S", …: gRPC over HTTP/2) in ms; Infinity when absent. */
export function timeoutMs(value: string | undefined): number {
  if (!value) return Infinity;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) return Infinity;
  const n = Number(m[1]);
  const per = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 }[m[2]]!;
  return n * per;
}

/** Why a request's messages are refused: a gRPC status code and its message. */
export interface Refusal {
  code: number;
  details: string;
}

/** Cuts incoming DATA into gRPC messages (5-byte prefix, uncompressed only). A refusal is
 * known from a message's prefix alone: an oversized one is not waited for. What a stream
 * holds counts in its connection's `inbound` until settle() or release(): many streams
 * each sending most of a large message cannot make the connection hold without bound. */
export class MessageReader {
  #parts: Buffer[] = [];
  #length = 0;
  /** Bytes it takes to go on: a prefix (5), or the message whose prefix came (5 + n). */
  #need = 5;
  #held = 0;
  constructor(private readonly maxBytes: number, private readonly inbound: Inbound) {}

  push(chunk: Buffer, out: Buffer[]): Refusal | undefined {
    this.#hold(this.#held + chunk.length);
    if (this.inbound.bytes > this.inbound.max) {
      this.release();
      return {
        code: GrpcStatus.RESOURCE_EXHAUSTED,
        details:
          `requests on this connection hold over grpcH2InboundBytesMax (${this.inbound.max} bytes)`,
      };
    }
    // Chunks wait in #parts until the next prefix or message is complete, then are joined
    // once: joining at every DATA frame copied a large message over and over (quadratic).
    this.#parts.push(chunk);
    this.#length += chunk.length;
    if (this.#length < this.#need) return undefined;
    let buf = this.#parts.length === 1 ? this.#parts[0] : Buffer.concat(this.#parts, this.#length);
    this.#need = 5;
    while (buf.length >= 5) {
      if (buf[0] !== 0) {
        // gRPC over HTTP/2: a compressed message without a grpc-encoding we offered.
        return { code: GrpcStatus.INTERNAL, details: "compressed messages are not accepted" };
      }
      const n = buf.readUInt32BE(1);
      if (n > this.maxBytes) {
        return {
          code: GrpcStatus.RESOURCE_EXHAUSTED,
          details: `a message of ${n} bytes is over grpcRequestBytesMax (${this.maxBytes})`,
        };
      }
      if (buf.length < 5 + n) {
        this.#need = 5 + n;
        break;
      }
      out.push(buf.subarray(5, 5 + n));
      buf = buf.subarray(5 + n);
    }
    this.#parts = buf.length > 0 ? [buf] : [];
    this.#length = buf.length;
    return undefined;
  }

  /** The messages taken out are decoded: only the partial one is still held. */
  settle() {
    this.#hold(this.#length);
  }

  /** The stream is done with its request: nothing is held. */
  release() {
    this.#hold(0);
    this.#parts = [];
    this.#length = 0;
    this.#need = 5;
  }

  #hold(n: number) {
    this.inbound.bytes += n - this.#held;
    this.#held = n;
  }

  get partial(): boolean {
    return this.#length > 0;
  }
}

export interface StatusObject {
  code: number;
  details?: string;
}

export class H2Call extends EventEmitter {
  request: unknown;
  readonly metadata: { get(key: string): string[] };
  cancelled = false;
  writableEnded = false;
  readonly #deadline: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    readonly stream: H2Stream,
    private readonly serialize: (value: unknown) => Uint8Array,
    nowMs: number,
  ) {
    super();
    const headers = stream.headers;
    this.metadata = { get: (k) => (headers.has(k) ? [headers.get(k)!] : []) };
    const ms = timeoutMs(headers.get("grpc-timeout"));
    this.#deadline = nowMs + ms;
    if (Number.isFinite(ms)) this.#arm(ms);
    stream.onreset = () => this.#cancel();
    stream.busy = true; // until the call ends or is cancelled (#close)
  }

  /** A timer for `ms`, in steps a timer can take: one longer than 2^31-1 ms (~24.8 days;
   * grpc-timeout allows 99999999H) would fire at once. */
  #arm(ms: number) {
    const step = Math.min(ms, TIMER_MS_MAX);
    this.#timer = setTimeout(() => {
      if (ms > step) this.#arm(ms - step);
      else this.#deadlinePassed();
    }, step);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  getDeadline(): number {
    return this.#deadline;
  }

  write(value: unknown): boolean {
    if (this.writableEnded || this.cancelled) return false;
    let bytes: Uint8Array;
    try {
      bytes = value instanceof Uint8Array ? value : this.serialize(value);
    } catch (err) {
      this.fail(GrpcStatus.INTERNAL, `Cannot encode the response: ${(err as Error).message}`);
      return false;
    }
    this.stream.message(bytes);
    return true;
  }

  end(): void {
    this.#finish(0, "");
  }

  /** Ends the call with a non-OK status. */
  fail(code: number, details: string) {
    this.#finish(code, details);
  }

  /** grpc-js's way for a handler to end a call with a status: emit("error", {code, details}). */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === "error") {
      const s = args[0] as StatusObject | undefined;
      this.#finish(s?.code ?? GrpcStatus.INTERNAL, s?.details ?? "");
      return this.listenerCount("error") > 0 ? super.emit(event, ...args) : true;
    }
    return super.emit(event, ...args);
  }

  #finish(code: number, details: string) {
    if (this.writableEnded) return;
    this.writableEnded = true;
    clearTimeout(this.#timer);
    if (!this.cancelled) this.stream.finish(code, details);
    this.#close();
  }

  /** As grpc-js: the client gets DEADLINE_EXCEEDED and the handler sees a cancelled call. */
  #deadlinePassed() {
    if (this.writableEnded || this.cancelled) return;
    this.stream.finish(GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded");
    this.writableEnded = true;
    this.#cancel();
  }

  #cancel() {
    if (this.cancelled) return this.#close();
    this.cancelled = true;
    clearTimeout(this.#timer);
    super.emit("cancelled");
    this.#close();
  }

  #close() {
    if (this.#closed) return;
    this.#closed = true;
    this.stream.release();
    queueMicrotask(() => super.emit("close"));
  }
}
