// A KV Connect host (protocol v1-v3, denokv proto/kv-connect.md) over one in-memory store:
// tests and local multi-process clusters point Deno.openKv(url) and @deno/kv's
// openKv(url) at it, so several processes on either runtime share one KV database (a
// local SQLite KV file cannot be shared: "database is locked").
//
// Serves: metadata exchange (POST /), snapshot_read, atomic_write (checks; set, delete,
// sum, min, max; expireAt) and watch under /kv. Refuses with a 400 and a plain-text
// reason: enqueue (KV Connect has no queues), versionstamped keys, and anything over
// Deno's limits (kv_connect_messages.ts). Every request needs `Authorization: Bearer
// <token>`. Data lives only as long as the host; expiry is described in
// memory_kv_store.ts.
//
// Runs on Deno and Bun through the platform's serve, with h2c: Deno's KV client speaks
// HTTP/2 without TLS (prior knowledge); @deno/kv uses fetch (HTTP/1.1).
// tests/support/kv_connect_host_test.ts runs each client against a host on each runtime.
import { timingSafeEqual } from "node:crypto";
import {
  decodeAtomicWrite,
  decodeSnapshotRead,
  encodeAtomicWriteOutput,
  encodeSnapshotReadOutput,
  KvRequestError,
} from "./kv_connect_messages.ts";
import { serveWatch, type WatchRegistry } from "./kv_connect_watch.ts";
import { KvMutationError, MemoryKvStore } from "./memory_kv_store.ts";
import { ProtobufError } from "./protobuf.ts";
import type { Platform } from "../../runtime/platform/platform.ts";

const PROTOCOL_VERSIONS = [3, 2, 1]; // preferred first
/** A backstop above Deno's KV Connect limits, which kv_connect_messages.ts enforces. */
const KV_HOST_REQUEST_BYTES_MAX = 64 * 1024 * 1024;
const DATA_PATH = "/kv";
/** How long clients may use the metadata before exchanging it again. */
const METADATA_TTL_MS = 60 * 60 * 1000;

export interface KvConnectHandlerOptions {
  /** The bearer token clients must present (the metadata exchange hands it back). */
  token: string;
  /** A UUID; clients send it back on every data-path request. */
  databaseId: string;
  store: MemoryKvStore;
  watches: WatchRegistry;
  nowMs: () => number;
  /** Keep-alive frame interval on idle watch streams. */
  watchKeepaliveMs: number;
  /** Called with errors that are our bugs, answered with a 500. */
  onError: (error: unknown) => void;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export function kvConnectHandler(
  options: KvConnectHandlerOptions,
): (request: Request) => Promise<Response> {
  const expectedAuth = new TextEncoder().encode(`Bearer ${options.token}`);
  const authorized = (request: Request) => {
    const got = new TextEncoder().encode(request.headers.get("authorization") ?? "");
    return got.length === expectedAuth.length && timingSafeEqual(got, expectedAuth);
  };
  return async (request) => {
    try {
      if (request.method !== "POST") throw new HttpError(405, "KV Connect takes POST only");
      if (!authorized(request)) throw new HttpError(401, "Missing or wrong bearer token");
      const path = new URL(request.url).pathname;
      if (path === "/") return await metadataExchange(request, options);
      const version = dataPathVersion(request, options.databaseId);
      const body = new Uint8Array(await request.arrayBuffer());
      if (path === `${DATA_PATH}/snapshot_read`) {
        const ranges = decodeSnapshotRead(body).map((r) => options.store.read(r));
        return protobuf(encodeSnapshotReadOutput(ranges));
      }
      if (path === `${DATA_PATH}/atomic_write`) {
        const write = decodeAtomicWrite(body);
        const result = options.store.commit(write.checks, write.mutations);
        return protobuf(encodeAtomicWriteOutput(result));
      }
      if (path === `${DATA_PATH}/watch`) {
        if (version < 3) throw new HttpError(400, `Watch needs protocol version 3, not ${version}`);
        return serveWatch(body, options);
      }
      throw new HttpError(404, `No KV Connect endpoint at ${path}`);
    } catch (error) {
      if (error instanceof HttpError) return text(error.status, error.message);
      if (
        error instanceof KvRequestError || error instanceof ProtobufError ||
        error instanceof KvMutationError
      ) {
        return text(400, error.message);
      }
      // Deno's client retries a 5xx forever, so request problems above are all 4xx and
      // a 500 means a bug here.
      options.onError(error);
      return text(500, `Internal error: ${error instanceof Error ? error.message : error}`);
    }
  };
}

async function metadataExchange(
  request: Request,
  options: KvConnectHandlerOptions,
): Promise<Response> {
  const raw = await request.text();
  let supported: unknown = [1]; // no body: a version 1 client (kv-connect.md)
  if (raw.trim() !== "") {
    try {
      supported = (JSON.parse(raw) as { supportedVersions?: unknown } | null)?.supportedVersions;
    } catch {
      throw new HttpError(400, "Metadata request body is not JSON");
    }
  }
  if (!Array.isArray(supported)) {
    throw new HttpError(400, "Metadata request needs supportedVersions: number[]");
  }
  const version = PROTOCOL_VERSIONS.find((v) => supported.includes(v));
  if (version === undefined) {
    throw new HttpError(
      400,
      `No common protocol version: client ${JSON.stringify(supported)}, host [1,2,3]`,
    );
  }
  // Version 1 clients (Deno's) do not resolve relative endpoint URLs.
  const endpoint = version === 1 ? new URL(DATA_PATH, request.url).href : DATA_PATH;
  const body = {
    version,
    databaseId: options.databaseId,
    endpoints: [{ url: endpoint, consistency: "strong" }],
    token: options.token,
    expiresAt: new Date(options.nowMs() + METADATA_TTL_MS).toISOString(),
  };
  // Exactly "application/json": @deno/kv refuses "application/json;charset=utf-8".
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}

/** The protocol version a data-path request claims; its database id must be ours. */
function dataPathVersion(request: Request, databaseId: string): number {
  const versionHeader = request.headers.get("x-denokv-version");
  const version = versionHeader === null ? 1 : Number(versionHeader);
  if (!PROTOCOL_VERSIONS.includes(version)) {
    throw new HttpError(400, `Unsupported x-denokv-version: ${versionHeader}`);
  }
  const idHeader = version === 1 ? "x-transaction-domain-id" : "x-denokv-database-id";
  const id = request.headers.get(idHeader);
  if (id !== databaseId) {
    throw new HttpError(400, `Unknown database ${idHeader}: ${id} (this host is ${databaseId})`);
  }
  return version;
}

function protobuf(body: Uint8Array<ArrayBuffer>): Response {
  return new Response(body, { headers: { "content-type": "application/x-protobuf" } });
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain" } });
}

export interface KvHostOptions {
  /** The platform's (runtime/platform): the one place that knows Deno from Bun. */
  serve: Platform["serve"];
  token: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  /** Keep it across restarts of a host so clients' cached metadata stays valid. */
  databaseId?: string;
  /** Wall clock for expiry and metadata; default Date.now. */
  nowMs?: () => number;
  /** See memory_kv_store.ts; default 0. */
  expiryLagMs?: number;
  /**
   * The data to serve; default a new empty store. Pass the `store` of a closed host to
   * restart on its data: a KV outage that loses nothing (give the same port and
   * databaseId too, so clients reconnect on their own). `nowMs` and `expiryLagMs` are the
   * store's then.
   */
  store?: MemoryKvStore;
  /** Default 10 s. */
  watchKeepaliveMs?: number;
  /** Default console.error. */
  onError?: (error: unknown) => void;
}

export interface KvHost extends AsyncDisposable {
  /** Give this to Deno.openKv / @deno/kv openKv. */
  readonly url: string;
  readonly port: number;
  readonly databaseId: string;
  readonly store: MemoryKvStore;
  /** Ends open watch streams, stops listening; the data is gone. */
  close(): Promise<void>;
}

/** Starts a host on the given platform's HTTP server. */
export async function startKvHost(options: KvHostOptions): Promise<KvHost> {
  const nowMs = options.nowMs ?? Date.now;
  const store = options.store ?? new MemoryKvStore({ nowMs, expiryLagMs: options.expiryLagMs });
  const watches: WatchRegistry = new Set();
  const databaseId = options.databaseId ?? crypto.randomUUID();
  const handler = kvConnectHandler({
    token: options.token,
    databaseId,
    store,
    watches,
    nowMs,
    watchKeepaliveMs: options.watchKeepaliveMs ?? 10_000,
    onError: options.onError ?? ((e) => console.error("KV Connect host:", e)),
  });
  const hostname = options.hostname ?? "127.0.0.1";
  const server = await options.serve({
    hostname,
    port: options.port ?? 0,
    // No idle cut-off: watch streams carry keep-alive frames anyway.
    maxRequestBodyBytes: KV_HOST_REQUEST_BYTES_MAX,
    h2c: true,
  }, handler);
  const urlHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  const url = `http://${urlHost}:${server.port}`;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const end of [...watches]) end();
      await server.close({ force: true });
    })();
    return closing;
  };
  return { url, port: server.port, databaseId, store, close, [Symbol.asyncDispose]: close };
}
