// A TCP listener on Bun's own sockets (Bun.listen), handing out connections with the small
// node:net-like surface the remoting front end and the lean gRPC transport use
// (TcpConnection, platform.ts). Bun's node:net write path costs the broker about a fifth of
// its CPU per small answer; Bun.listen writes straight to the socket (bench/README.md,
// "Remoting"), and a broker that never loads node:net idles in ~0.9 MiB less (round 6).
//
// Writes: Bun's socket.write() takes what the kernel accepts now and returns the count;
// the rest is queued here, in order, and flushed on drain.
import type { TcpConnection, TcpListenOptions, TcpServer } from "./platform.ts";

// deno-lint-ignore no-explicit-any
const Bun = (globalThis as any).Bun;

// deno-lint-ignore no-explicit-any
type Listener = (...a: any[]) => void;

// deno-lint-ignore no-explicit-any
type BunSocket = any;

class BunConnection implements TcpConnection {
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly #listeners = new Map<string, Listener[]>();
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #closed = false;
  /** end() was called: the socket ends once what is queued here is written. */
  #ending = false;
  #timeoutMs = 0;
  #timeoutFn: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastActiveMs = 0;

  constructor(readonly socket: BunSocket) {
    this.remoteAddress = socket.remoteAddress ?? "";
    this.remotePort = socket.remotePort ?? 0;
  }

  on(event: string, listener: Listener): this {
    const list = this.#listeners.get(event) ?? [];
    list.push(listener);
    this.#listeners.set(event, list);
    return this;
  }

  once(event: string, listener: Listener): this {
    const once: Listener = (...args) => {
      this.off(event, once);
      listener(...args);
    };
    return this.on(event, once);
  }

  off(event: string, listener: Listener): this {
    const list = this.#listeners.get(event);
    const i = list?.indexOf(listener) ?? -1;
    if (i >= 0) list!.splice(i, 1);
    return this;
  }

  emit(event: string, ...args: unknown[]): void {
    for (const l of [...(this.#listeners.get(event) ?? [])]) l(...args);
  }

  /** Bytes queued here that the kernel has not taken yet (node:net's writableLength). */
  get writableLength(): number {
    return this.#pendingBytes;
  }

  write(data: Uint8Array): boolean {
    if (this.#closed) return false;
    this.#touch();
    if (this.#pending.length) {
      this.#queue(data);
      return false;
    }
    const n = this.socket.write(data);
    if (n < data.length) this.#queue(data.subarray(Math.max(n, 0)));
    return n >= data.length;
  }

  #queue(data: Uint8Array): void {
    this.#pending.push(data);
    this.#pendingBytes += data.length;
  }

  drain(): void {
    if (this.#pending.length === 0) return;
    while (this.#pending.length) {
      const head = this.#pending[0];
      const n = Math.max(this.socket.write(head), 0);
      this.#pendingBytes -= n;
      if (n < head.length) {
        this.#pending[0] = head.subarray(n);
        return;
      }
      this.#pending.shift();
    }
    if (this.#ending) this.socket.end();
    this.emit("drain");
  }

  /** Ends the connection once what is queued is written (node:net's end()). */
  end(): void {
    if (this.#closed || this.#ending) return;
    this.#ending = true;
    if (this.#pending.length === 0) this.socket.end();
  }

  destroy(): void {
    if (this.#closed) return;
    this.socket.end();
  }

  /** Stops reading until resume(): the peer's writes wait in the kernel (backpressure). */
  pause(): this {
    this.socket.pause?.();
    return this;
  }

  resume(): this {
    this.socket.resume?.();
    return this;
  }

  setNoDelay(): this {
    return this; // Bun's sockets send without Nagle's delay by default
  }

  setTimeout(ms: number, fn?: () => void): this {
    this.#timeoutMs = ms;
    this.#timeoutFn = fn;
    this.#touch();
    return this;
  }

  /** Data arrived or was sent. The timer is not re-armed per chunk (a timer per request
   * costs more than the request): when it fires early it waits out the remainder. */
  #touch(): void {
    if (!this.#timeoutMs || this.#closed) return;
    this.#lastActiveMs = performance.now();
    if (this.#timer === undefined) this.#arm(this.#timeoutMs);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      const idle = performance.now() - this.#lastActiveMs;
      if (idle >= this.#timeoutMs) this.#timeoutFn?.();
      else this.#arm(this.#timeoutMs - idle);
    }, ms);
  }

  received(data: Uint8Array): void {
    this.#touch();
    this.emit("data", data);
  }

  closed(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.emit("close");
  }
}

export function listenBunTcp(
  options: TcpListenOptions,
  onConnection: (connection: TcpConnection) => void,
): Promise<TcpServer> {
  try {
    return Promise.resolve(listen(options, onConnection));
  } catch (err) {
    return Promise.reject(err); // a taken port: as node:net, a rejection
  }
}

function listen(
  options: TcpListenOptions,
  onConnection: (connection: TcpConnection) => void,
): TcpServer {
  const server = Bun.listen({
    hostname: options.hostname,
    port: options.port,
    socket: {
      open(socket: BunSocket) {
        const c = new BunConnection(socket);
        socket.data = c;
        onConnection(c);
      },
      data(socket: BunSocket, data: Uint8Array) {
        socket.data?.received(data);
      },
      drain(socket: BunSocket) {
        socket.data?.drain();
      },
      close(socket: BunSocket) {
        socket.data?.closed();
      },
      error(socket: BunSocket, err: Error) {
        socket.data?.emit("error", err);
      },
    },
  });
  return {
    port: server.port,
    close: () => {
      server.stop(false);
      return Promise.resolve();
    },
  };
}
