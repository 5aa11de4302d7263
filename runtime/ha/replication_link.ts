// One replication TCP connection, framed (frames.ts), over node:net, which behaves alike on
// Deno and Bun (DESIGN.md, "A small portability seam"). The link decodes frames as bytes
// arrive and hands them over in order; the first error of any kind (socket, malformed
// frame, the owner's refusal) closes it, and close() resolves once the socket is gone, so
// stop() leaves no socket behind (Deno's test sanitizers check).
import type * as net from "node:net";
import { encodeFrame, type Frame, FrameDecoder, FrameError } from "./frames.ts";
import { ReplicationError } from "./replication_errors.ts";

export interface LinkHandlers {
  /** Called for each frame in arrival order; a throw closes the link with that error. */
  onFrame(frame: Frame): void;
  /** Called once, after the socket closed; `error` is why, undefined for a plain close. */
  onClose(error: ReplicationError | undefined): void;
  /** The socket's write buffer drained after send() returned false. */
  onDrain?(): void;
}

export class FrameLink {
  readonly address: string;
  readonly nowMs: () => number;
  lastReceivedMs: number;
  lastSentMs: number;
  #socket: net.Socket;
  #decoder: FrameDecoder;
  #handlers: LinkHandlers;
  #error: ReplicationError | undefined;
  #closing = false;
  #closed: Promise<void>;

  constructor(
    socket: net.Socket,
    options: {
      frameBytesMax: number;
      nowMs: () => number;
      handlers: LinkHandlers;
      /** How logs and errors name the peer (default: the socket's remote address). */
      label?: string;
    },
  ) {
    this.nowMs = options.nowMs;
    this.#handlers = options.handlers;
    const nowMs = options.nowMs;
    const frameBytesMax = options.frameBytesMax;
    this.#socket = socket;
    this.#decoder = new FrameDecoder(frameBytesMax);
    this.address = options.label ?? `${socket.remoteAddress}:${socket.remotePort}`;
    this.lastReceivedMs = this.lastSentMs = nowMs();
    socket.setNoDelay(true);
    this.#closed = new Promise((resolve) => {
      socket.once("close", () => {
        this.#closing = true;
        resolve();
        this.#handlers.onClose(this.#error);
      });
    });
    socket.on("error", (err: Error) => {
      this.#fail(
        new ReplicationError(
          "LINK_FAILED",
          `Replication link ${this.address} failed: ${err.message}`,
          { cause: err },
        ),
      );
    });
    socket.on("drain", () => this.#handlers.onDrain?.());
    socket.on("data", (chunk: Uint8Array) => this.#receive(chunk));
  }

  get closed(): boolean {
    return this.#closing;
  }
  get error(): ReplicationError | undefined {
    return this.#error;
  }

  /** Queues one frame; false when the socket's buffer is full (wait for onDrain) or closed. */
  send(frame: Frame): boolean {
    if (this.#closing) return false;
    this.lastSentMs = this.nowMs();
    return this.#socket.write(encodeFrame(frame));
  }

  /** Closes with `error` as the reason (the first reason given wins); resolves when closed. */
  close(error?: ReplicationError): Promise<void> {
    this.#fail(error);
    return this.#closed;
  }

  #fail(error: ReplicationError | undefined) {
    this.#error ??= error;
    if (this.#closing) return;
    this.#closing = true;
    this.#socket.destroy();
  }

  #receive(chunk: Uint8Array) {
    if (this.#closing) return;
    this.lastReceivedMs = this.nowMs();
    try {
      this.#decoder.pushEach(chunk, (frame) => {
        if (!this.#closing) this.#handlers.onFrame(frame);
      });
    } catch (err) {
      this.#fail(
        err instanceof ReplicationError ? err : new ReplicationError(
          "PROTOCOL_VIOLATION",
          `Replication link ${this.address} sent a bad frame: ${(err as Error).message}`,
          { cause: err },
        ),
      );
      if (!(err instanceof ReplicationError) && !(err instanceof FrameError)) throw err;
    }
  }
}
