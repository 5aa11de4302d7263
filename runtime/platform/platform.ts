// The one port between the broker and its runtime (STYLE.md, "One port"). Only this folder
// knows Deno from Bun: entry files call pickPlatform() (pick.ts) once and hand the Platform
// down; storage sees only the ports it declares (FilePort, SqliteOpen).
import type { Socket } from "node:net";
import type { FilePort } from "../../storage/file_port.ts";
import type { SqliteOpen } from "../../storage/metadata/sqlite.ts";
import type { KvOpenOptions, KvPort } from "./kv_port.ts";
import type { ConnectionLimits } from "./conn_guard.ts";

export type { ConnectionLimits };

export interface ServeOptions {
  hostname: string;
  port: number;
  /**
   * Header, idle and connection-count limits, the same on both runtimes: a TCP front
   * (conn_guard.ts) enforces them and the runtime's server listens behind it on loopback
   * with no idle limit of its own. Without them (the KV host's h2c, Deno Deploy) the
   * runtime's server listens itself and never closes an idle connection.
   */
  connections?: ConnectionLimits;
  /** Bun enforces this itself; on Deno functions/body.ts does. */
  maxRequestBodyBytes: number;
  /** Also accept HTTP/2 without TLS (h2c, prior knowledge), as Deno's KV client speaks. */
  h2c?: boolean;
  /** Serve HTTPS only, with this certificate: the runtime's server takes it, or with
   * `connections` the guard's front does (it must read the requests it times). */
  tls?: TlsPem;
}

/** A PEM certificate chain and its private key (the files' text). */
export interface TlsPem {
  cert: string;
  key: string;
}

export interface HttpServer {
  readonly port: number;
  /**
   * Stops accepting, waits for requests in flight. `force` also cuts idle and streaming
   * connections on Bun (its stop(true)); Deno's shutdown does so by itself.
   */
  close(options?: { force?: boolean }): Promise<void>;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;

export interface TcpListenOptions {
  hostname: string;
  /** 0: any free port (see TcpServer.port). */
  port: number;
}

/** The part of a TCP connection a framed protocol needs; node:net's Socket has it. */
export interface TcpConnection {
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "close", listener: () => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  /** Queues `data` in order; false when it could not all be sent at once. */
  write(data: Uint8Array): boolean;
  destroy(): void;
  /** Calls `listener` after `ms` without data in either direction. */
  setTimeout(ms: number, listener?: () => void): unknown;
  setNoDelay(noDelay?: boolean): unknown;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  /** Ends the connection once what is queued is written. */
  end(): unknown;
  /** What the lean gRPC transport needs besides (node:net's Socket has all of it). */
  pause?(): unknown;
  resume?(): unknown;
  once?(event: "drain" | "close", listener: () => void): unknown;
  /** Bytes written and not yet taken by the kernel. */
  readonly writableLength?: number;
}

export interface TcpServer {
  readonly port: number;
  /** Stops accepting; open sockets stay open (their owners close them). */
  close(): Promise<void>;
}

/** Time as the broker may read it: nothing else calls Date.now() or setTimeout for it. */
export interface Clock {
  /** Never goes back, never jumps with NTP; deadlines are judged by it. */
  monotonicMs(): number;
  /** Wall clock, ms since 1970: for timestamps others read. */
  wallMs(): number;
  /** Calls `fn` once after `ms` of monotonic time; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

/**
 * A stored body as JSON text, or undefined when it must go out as base64: when it is not
 * UTF-8, or when its text holds U+FFFD (README, "bodyEncoding"). The same bytes give the
 * same answer on every runtime; each runtime takes its faster way there.
 */
export type BodyText = (body: Uint8Array) => string | undefined;

export interface Platform {
  readonly name: "deno" | "bun";
  readonly version: string;
  readonly files: FilePort;
  readonly clock: Clock;
  readonly bodyText: BodyText;
  serve(options: ServeOptions, handler: FetchHandler): Promise<HttpServer>;
  /** A plain TCP listener; `onSocket` gets each accepted node:net socket. */
  listenTcp(
    options: TcpListenOptions,
    onSocket: (socket: Socket) => void,
  ): Promise<TcpServer>;
  /** A TCP listener for framed protocols (the remoting front end): node:net on Deno,
   * Bun's own sockets on Bun (bun_tcp.ts). Each connection has TcpConnection's surface. */
  listenTcpConnections(
    options: TcpListenOptions,
    onConnection: (connection: TcpConnection) => void,
  ): Promise<TcpServer>;
  /** A local KV file, a KV Connect URL, or (no path: Deno Deploy only) the app's own KV. */
  openKv(pathOrUrl?: string, options?: KvOpenOptions): Promise<KvPort>;
  /** The metadata database's SQLite binding. */
  readonly openSqlite: SqliteOpen;
  /**
   * A fetch that trusts the CA certificates in `caPem` besides the runtime's own roots, for
   * brokers serving TLS with a private CA. Verification stays on: a certificate from any
   * other issuer, or for another name, is still refused.
   */
  fetchTrusting(caPem: string): TrustingFetch;
  /**
   * A memory-reducing full collection that gives freed memory back (runtime/idle_gc.ts),
   * or undefined where there is none to ask for: Deno without --expose-gc, and Bun, whose
   * collector returns memory on its own (Bun.gc(true) on an idle broker: no change).
   */
  readonly collectGarbage?: () => void;
}

/** A fetch with its own trust anchors; close() releases its pooled connections (Deno). */
export type TrustingFetch = typeof fetch & { close(): void };
