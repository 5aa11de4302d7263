// One HTTP/2 stream of the lean transport, server side: what came in (headers, then DATA
// handed on as it arrives) and what goes out (response headers once, gRPC messages as DATA
// within the flow-control windows, then trailers). conn.ts owns the connection's windows
// and writes; a stream queues what the windows do not yet allow.
import { Buffer } from "node:buffer";
import type { Inbound } from "./limits.ts";
import { RESPONSE_HEADERS, statusBlock, TRAILERS_OK } from "./hpack.ts";

/** What a stream needs from its connection. */
export interface StreamOwner {
  /** Our send window on the connection, and the peer's largest frame. */
  sendWindow: number;
  readonly peerFrameBytes: number;
  /** Request bytes the connection's streams hold (call.ts MessageReader). */
  readonly inbound: Inbound;
  headers(stream: number, block: Uint8Array, end: boolean): void;
  /** One DATA frame of `length` bytes made of `pieces`. */
  data(stream: number, pieces: Uint8Array[], length: number): void;
  /** The stream is done on our side (trailers sent or reset). */
  finished(stream: H2Stream): void;
}

export class H2Stream {
  /** Our send window on this stream. */
  sendWindow: number;
  /** Bytes received and not yet given back by WINDOW_UPDATE. */
  recvUnacked = 0;
  remoteEnded = false;
  /** Trailers sent or reset: nothing more goes out. */
  done = false;
  ondata?: (chunk: Buffer) => void;
  onend?: () => void;
  /** The client reset the stream, or the connection went. */
  onreset?: () => void;
  /** Its handler is at work (release() when done): a stream the client resets meanwhile
   * still counts against the connection's stream limit (conn.ts). */
  busy = false;
  onreleased?: () => void;
  #headersSent = false;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #trailers: Uint8Array | undefined;
  #scheduled = false;

  constructor(
    readonly id: number,
    readonly headers: Map<string, string>,
    window: number,
    private readonly owner: StreamOwner,
  ) {
    this.sendWindow = window;
  }

  /** The connection's held request bytes (its streams share one bound). */
  get inbound(): Inbound {
    return this.owner.inbound;
  }

  /** Bytes queued behind the flow-control windows. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** One gRPC message (5-byte prefix added here). */
  message(bytes: Uint8Array) {
    if (this.done || this.#trailers) return;
    this.#sendHeaders();
    // The prefix and the message as two pieces: the writer copies both into one write.
    const prefix = Buffer.allocUnsafe(5);
    prefix[0] = 0;
    prefix.writeUInt32BE(bytes.length, 1);
    this.#pending.push(prefix, bytes);
    this.#pendingBytes += 5 + bytes.length;
    this.#schedule();
  }

  /** Ends the call with a status (trailers; trailers-only when nothing was sent). */
  finish(code: number, message = "") {
    if (this.done || this.#trailers) return;
    if (!this.#headersSent && this.#pendingBytes === 0) {
      this.#headersSent = true;
      this.#trailers = statusBlock(code, message, true);
    } else {
      this.#sendHeaders();
      this.#trailers = code === 0 && !message ? TRAILERS_OK : statusBlock(code, message, false);
    }
    this.#schedule();
  }

  /** Pumps once the current task's writes are queued: a receive's messages share DATA frames. */
  #schedule() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.pump();
    });
  }

  /** Sends what the windows allow; the trailers once nothing is left. */
  pump() {
    const o = this.owner;
    while (this.#pendingBytes > 0) {
      const room = Math.min(this.sendWindow, o.sendWindow, o.peerFrameBytes);
      if (room <= 0) return;
      // One DATA frame of up to `room` bytes, from as many queued pieces as it takes.
      const n = Math.min(room, this.#pendingBytes);
      const pieces: Uint8Array[] = [];
      for (let left = n; left > 0;) {
        const head = this.#pending[0];
        if (head.length <= left) {
          pieces.push(head);
          this.#pending.shift();
          left -= head.length;
        } else {
          pieces.push(head.subarray(0, left));
          this.#pending[0] = head.subarray(left);
          left = 0;
        }
      }
      this.#pendingBytes -= n;
      this.sendWindow -= n;
      o.sendWindow -= n;
      o.data(this.id, pieces, n);
    }
    if (this.#trailers && !this.done) {
      this.done = true;
      o.headers(this.id, this.#trailers, true);
      o.finished(this);
    }
  }

  #sendHeaders() {
    if (this.#headersSent) return;
    this.#headersSent = true;
    this.owner.headers(this.id, RESPONSE_HEADERS, false);
  }

  /** The handler is done with it. */
  release() {
    if (!this.busy) return;
    this.busy = false;
    const released = this.onreleased;
    this.onreleased = undefined;
    released?.();
  }

  /** The peer reset it or the connection closed: drop what is queued. */
  reset() {
    const was = this.done;
    this.done = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (!was) this.onreset?.();
  }
}
