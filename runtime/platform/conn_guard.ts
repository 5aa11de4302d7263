// A TCP front for the HTTP server that counts and times connections, which neither
// runtime's own server can (reference/reliability.md §5.2): Deno.serve has no header,
// idle or connection limit at all; Bun.serve has one idleTimeout for everything (a long
// poll in flight counts as idle) and no connection count. The front accepts each client
// on node:net, refuses it at once past `connectionsMax`, and otherwise pipes its bytes to
// the runtime's server listening on a Unix socket, watching only where a request starts and
// ends:
//
//   idle ──first byte──▶ headers ──"\r\n\r\n"──▶ in flight ──first response byte──▶ idle
//     └ idleMs of silence: close   └ headerMs since first byte: close (slow-loris)
//
// A request in flight (a long poll held up to pullWaitMsMax, a slow body: functions/body.ts
// bounds that) has no timer here. After the first response byte the connection counts as
// idle again, but every byte either way restarts the idle timer, so a response still
// flowing is never cut; one the client stops reading is, after idleMs.
// HTTP/1.1 only: h2c (the KV host) is served without the front.
import * as net from "node:net";
import type { TcpServer } from "./platform.ts";

export interface ConnectionLimits {
  /** A request's head (request line and headers) must arrive within this, from its first byte. */
  headerTimeoutMs: number;
  /** A connection with no request in flight and no bytes moving is closed after this. */
  idleTimeoutMs: number;
  /** Open client connections; one more is closed at once. */
  connectionsMax: number;
}

export interface ConnectionGuardOptions extends ConnectionLimits {
  hostname: string;
  port: number;
  /** The Unix socket the runtime's HTTP server listens on. */
  upstreamPath: string;
}

export interface ConnectionGuard extends TcpServer {
  /** Client connections open now. */
  readonly open: number;
  /** Closes every client connection (a forced stop). */
  destroyAll(): void;
}

const CR = 13;
const LF = 10;
/** The sweep that closes late connections runs this often at most and at least. */
const SWEEP_MS_MIN = 50;
const SWEEP_MS_MAX = 1000;

interface Conn {
  client: net.Socket;
  upstream: net.Socket;
  state: "idle" | "headers" | "inFlight";
  /** Monotonic ms after which the sweep closes it; Infinity while a request is in flight. */
  deadlineMs: number;
  /** How many bytes of "\r\n\r\n" the head bytes scanned so far end with. */
  matched: number;
}

export function listenConnectionGuard(options: ConnectionGuardOptions): Promise<ConnectionGuard> {
  const conns = new Set<Conn>();
  const server = net.createServer({ noDelay: true }, (client) => {
    if (conns.size >= options.connectionsMax) {
      client.destroy();
      return;
    }
    const conn = guard(client, options);
    conns.add(conn);
    client.once("close", () => conns.delete(conn));
  });
  // One timer for all connections: a request costs two numbers written, not a timer.
  const sweepMs = Math.max(
    SWEEP_MS_MIN,
    Math.min(
      SWEEP_MS_MAX,
      Math.floor(Math.min(options.headerTimeoutMs, options.idleTimeoutMs) / 10),
    ),
  );
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const c of conns) {
      if (c.deadlineMs <= now) close(c);
    }
  }, sweepMs);
  return new Promise((resolve, reject) => {
    server.once("error", (err) => {
      clearInterval(sweep);
      reject(err);
    });
    server.listen(options.port, options.hostname, () => {
      server.removeAllListeners("error");
      const { port } = server.address() as net.AddressInfo;
      resolve({
        port,
        get open() {
          return conns.size;
        },
        destroyAll() {
          for (const c of conns) close(c);
        },
        close: () =>
          new Promise<void>((done) =>
            server.close(() => {
              clearInterval(sweep);
              done();
            })
          ),
      });
    });
  });
}

function close(c: Conn): void {
  c.client.destroy();
  c.upstream.destroy();
}

/** One client connection: pipes it to the upstream server and keeps its deadline. */
function guard(client: net.Socket, limits: ConnectionGuardOptions): Conn {
  const upstream = net.connect({ path: limits.upstreamPath });
  // A connection opens waiting for its first request's head.
  const c: Conn = {
    client,
    upstream,
    state: "headers",
    deadlineMs: performance.now() + limits.headerTimeoutMs,
    matched: 0,
  };
  client.on("data", (chunk: Uint8Array) => {
    if (c.state === "idle") {
      c.state = "headers";
      c.matched = 0;
      c.deadlineMs = performance.now() + limits.headerTimeoutMs;
    }
    if (c.state === "headers" && headEnds(c, chunk)) {
      c.state = "inFlight";
      c.deadlineMs = Infinity;
    }
    if (!upstream.write(chunk)) client.pause();
  });
  upstream.on("data", (chunk: Uint8Array) => {
    if (c.state !== "headers") {
      c.state = "idle";
      c.deadlineMs = performance.now() + limits.idleTimeoutMs;
    }
    if (!client.write(chunk)) upstream.pause();
  });
  upstream.on("drain", () => client.resume());
  client.on("drain", () => upstream.resume());
  client.on("end", () => upstream.end());
  upstream.on("end", () => client.end());
  const done = () => close(c);
  client.on("close", done);
  upstream.on("close", done);
  client.on("error", done);
  upstream.on("error", done);
  return c;
}

/** Scans for the blank line ending a request's head, across chunk boundaries. */
function headEnds(c: Conn, chunk: Uint8Array): boolean {
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
