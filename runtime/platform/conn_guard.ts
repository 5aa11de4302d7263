// A TCP front for the HTTP server that counts and times connections, which neither
// runtime's own server can (reference/reliability.md §5.2): Deno.serve has no header,
// idle or connection limit at all; Bun.serve has one idleTimeout for everything (a long
// poll in flight counts as idle) and no connection count. A front accepts each client,
// refuses it at once past `connectionsMax`, and otherwise pipes its bytes to the runtime's
// server listening on loopback (conn_guard_node.ts, node:net on both runtimes), while
// this tracker watches only where a request starts and ends:
//
//   idle ──first byte──▶ headers ──"\r\n\r\n"──▶ in flight ──first response byte──▶ idle
//     └ idleMs of silence: close   └ headerMs since first byte: close (slow-loris)
//
// A request in flight (a long poll held up to pullWaitMsMax, a slow body: functions/body.ts
// bounds that) has no timer here. After the first response byte the connection counts as
// idle again, but every byte either way restarts the idle timer, so a response still
// flowing is never cut; one the client stops reading is, after idleMs.
// HTTP/1.1 only: h2c (the KV host) is served without the front.

export interface ConnectionLimits {
  /** A request's head (request line and headers) must arrive within this, from its first byte. */
  headerTimeoutMs: number;
  /** A connection with no request in flight and no bytes moving is closed after this. */
  idleTimeoutMs: number;
  /** Open client connections; one more is closed at once. */
  connectionsMax: number;
}

/** What a front needs to listen: where, the server's port, and the tracker. */
export interface FrontOptions {
  hostname: string;
  port: number;
  /** The loopback port the runtime's HTTP server listens on. */
  upstreamPort: number;
  tracker: ConnectionTracker;
  /** Accept TLS only, with this certificate, and pipe the plaintext upstream; a handshake
   * must end within handshakeTimeoutMs (the header timeout), before the tracker sees it. */
  tls?: { cert: string; key: string; handshakeTimeoutMs: number };
}

/** A listening front: `close()` stops accepting; open connections stay (see whenEmpty). */
export interface Front {
  readonly port: number;
  close(): Promise<void>;
}

/** One client connection as the tracker sees it. */
export interface Tracked {
  state: "idle" | "headers" | "inFlight";
  /** Monotonic ms after which the sweep closes it; Infinity while a request is in flight. */
  deadlineMs: number;
  /** How many bytes of "\r\n\r\n" the head bytes scanned so far end with. */
  matched: number;
  /** Closes both sides of the connection. */
  destroy: () => void;
}

const CR = 13;
const LF = 10;
const DIGIT_1 = 0x31;
/** Byte 9 of a status line ("HTTP/1.1 100 …") is the first digit of the status. */
const STATUS_DIGIT_AT = 9;
/** The sweep that closes late connections runs this often at most and at least. */
const SWEEP_MS_MIN = 50;
const SWEEP_MS_MAX = 1000;

export interface TrackerOptions {
  /** Monotonic ms (default performance.now); tests pass a manual clock. */
  nowMs?: () => number;
  /** false: no sweep timer, the caller calls sweep() (tests). */
  sweepTimer?: boolean;
}

/** Counts connections and keeps their deadlines; one sweep timer closes the late ones. */
export class ConnectionTracker {
  readonly #conns = new Set<Tracked>();
  readonly #limits: ConnectionLimits;
  readonly #now: () => number;
  readonly #sweep: ReturnType<typeof setInterval> | undefined;
  #emptied: (() => void)[] = [];

  constructor(limits: ConnectionLimits, options: TrackerOptions = {}) {
    this.#limits = limits;
    this.#now = options.nowMs ?? (() => performance.now());
    // One timer for all connections: a request costs two numbers written, not a timer.
    const sweepMs = Math.max(
      SWEEP_MS_MIN,
      Math.min(
        SWEEP_MS_MAX,
        Math.floor(Math.min(limits.headerTimeoutMs, limits.idleTimeoutMs) / 10),
      ),
    );
    this.#sweep = options.sweepTimer === false
      ? undefined
      : setInterval(() => this.sweep(), sweepMs);
  }

  /** Closes every connection past its deadline. */
  sweep(): void {
    const now = this.#now();
    for (const c of this.#conns) if (c.deadlineMs <= now) c.destroy();
  }

  get open(): number {
    return this.#conns.size;
  }

  /** A new client connection, or undefined when `connectionsMax` are open (close it). */
  admit(destroy: () => void): Tracked | undefined {
    if (this.#conns.size >= this.#limits.connectionsMax) return undefined;
    // A connection opens waiting for its first request's head.
    const c: Tracked = {
      state: "headers",
      deadlineMs: this.#now() + this.#limits.headerTimeoutMs,
      matched: 0,
      destroy,
    };
    this.#conns.add(c);
    return c;
  }

  release(c: Tracked): void {
    if (!this.#conns.delete(c) || this.#conns.size > 0) return;
    for (const resolve of this.#emptied.splice(0)) resolve();
  }

  /** Resolves when no connection is open. */
  whenEmpty(): Promise<void> {
    if (this.#conns.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptied.push(resolve));
  }

  /** Bytes from the client, before they go upstream. */
  fromClient(c: Tracked, chunk: Uint8Array): void {
    if (c.state === "idle") {
      c.state = "headers";
      c.matched = 0;
      c.deadlineMs = this.#now() + this.#limits.headerTimeoutMs;
    }
    if (c.state === "headers" && headEnds(c, chunk)) {
      c.state = "inFlight";
      c.deadlineMs = Infinity;
    }
  }

  /** Bytes from the server, before they go to the client. */
  fromUpstream(c: Tracked, chunk: Uint8Array): void {
    if (c.state === "headers") return; // an answer to an earlier request, or an early refusal
    // 100 Continue: the client sends its body next, the request is still in flight.
    if (c.state === "inFlight" && chunk[STATUS_DIGIT_AT] === DIGIT_1) return;
    c.state = "idle";
    c.deadlineMs = this.#now() + this.#limits.idleTimeoutMs;
  }

  destroyAll(): void {
    for (const c of this.#conns) c.destroy();
  }

  /** Stops the sweep (after the front has closed and its connections are gone). */
  stop(): void {
    if (this.#sweep !== undefined) clearInterval(this.#sweep);
  }
}

/** Scans for the blank line ending a request's head, across chunk boundaries. */
function headEnds(c: Tracked, chunk: Uint8Array): boolean {
  let matched = c.matched;
  for (let i = 0; i < chunk.length; i++) {
    const b = chunk[i];
    if (b === (matched % 2 === 0 ? CR : LF)) {
      if (++matched === 4) return true;
    } else {
      matched = b === CR ? 1 : 0;
    }
  }
  c.matched = matched;
  return false;
}
