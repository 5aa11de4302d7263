// The webhook transport egress.ts uses (issue #6): pinned POSTs over our own small
// HTTP/1.1 client on node:net/node:tls. It replaced an undici Pool with a pinned connect:
// profiles of the push bench put a third of the broker's CPU in undici's request path
// (writeH1, its wasm parser, header checks, two socket writes per request) for a client
// that only ever sends one POST with a known length and reads one response. This does
// that and nothing more: the request head and body go out in one write, and the response
// is parsed by a small state machine. push_bench deliveries/s rose 1.4-1.7x on both
// runtimes. Types and helpers are http_delivery.ts's. What it guarantees:
// - pinned address: each pool belongs to one origin and one vetted address, and its
//   connections dial that address only; Host comes from the URL, SNI and the certificate
//   check use the URL's name;
// - no redirects (a 3xx is a result), no proxy variables, no global dispatcher;
// - deadlines: a connect timer per dial and a total timer per attempt;
// - capped reads: the response head is refused past responseHeaderBytesMax and the body is
//   dropped, with its connection, past responseBytesMax; the first bodyPrefixBytes are kept;
// - one request per connection at a time (no pipelining); a connection goes back to its
//   pool only after a complete response that did not ask to close.
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { clearInterval, setInterval } from "node:timers";
import {
  type Checked,
  checkWebhookUrl,
  type EgressPolicy,
  VetMemo,
  type VettedAddress,
} from "./ssrf.ts";
import {
  classify,
  concat,
  KEPT_HEADER_CHARS_MAX,
  KEPT_HEADERS,
  type KeptHeaderName,
  NOT_OURS,
  pinnedLookup,
  type PinnedPostRequest,
  type PostFailure,
  type PostOutcome,
  prepare,
  type PreparedTarget,
  WEBHOOK_BODY_PREFIX_BYTES_DEFAULT,
  WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT,
  WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
  WEBHOOK_IDLE_CONNECTION_MS_DEFAULT,
  WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT,
  WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT,
  WEBHOOK_TARGETS_CACHED_MAX_DEFAULT,
  WEBHOOK_TOTAL_TIMEOUT_MS_DEFAULT,
  WebhookDeliveryError,
  type WebhookDeliveryErrorCode,
  type WebhookHttpClientOptions,
} from "./http_delivery.ts";

/** What every pool, connection and attempt needs from its client. */
interface Settings {
  readonly connectTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly bodyPrefixBytes: number;
  readonly responseBytesMax: number;
  readonly responseHeaderBytesMax: number;
  readonly connectionsPerAddressMax: number;
  readonly idleConnectionMs: number;
  readonly targetsCachedMax: number;
  readonly userAgent: string;
  readonly nowMs: () => number;
  readonly caCerts: string[] | undefined;
}

/** RFC 9110 token: a header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value we can send as latin1 bytes: no CR, LF, NUL or other controls but tab. */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** Longest chunk-size or trailer line we read. */
const CHUNK_LINE_BYTES_MAX = 4096;

/** [end of the line's content, index after its LF] of the first line end at or after
 * `from` (LF or CR LF); undefined if none yet. */
function lineEnd(bytes: Buffer, from: number): [number, number] | undefined {
  const lf = bytes.indexOf(10, from);
  if (lf < 0) return undefined;
  return [lf > 0 && bytes[lf - 1] === 13 ? lf - 1 : lf, lf + 1];
}

/** [end of the head, index after the empty line that ends it], the empty line being LF
 * or CR LF after a line end; undefined if not there yet. */
function headEnd(bytes: Buffer, from: number): [number, number] | undefined {
  for (let lf = bytes.indexOf(10, from); lf >= 0; lf = bytes.indexOf(10, lf + 1)) {
    if (bytes[lf + 1] === 10) return [lf, lf + 2];
    if (bytes[lf + 1] === 13 && bytes[lf + 2] === 10) return [lf, lf + 3];
    if (lf + 2 >= bytes.length) return undefined;
  }
  return undefined;
}

/** Webhook POSTs with pinned addresses over keep-alive connections of our own. */
export class H1WebhookClient {
  readonly #policy: EgressPolicy;
  readonly #vets: VetMemo;
  readonly #settings: Settings;
  /** One pool per origin and vetted address; the oldest is closed past the bound. */
  readonly #pools = new Map<string, Pool>();
  /** Evicted pools still serving what they accepted; close() ends them too. */
  readonly #retired = new Set<Pool>();
  readonly #inflight = new Set<Attempt>();
  readonly #targets = new Map<string, Checked<PreparedTarget>>();
  readonly #sweeper: ReturnType<typeof setInterval>;
  #closed = false;

  constructor(options: WebhookHttpClientOptions) {
    this.#policy = options.policy;
    this.#vets = new VetMemo(options.policy);
    const idleConnectionMs = options.idleConnectionMs ?? WEBHOOK_IDLE_CONNECTION_MS_DEFAULT;
    this.#settings = {
      connectTimeoutMs: options.connectTimeoutMs ?? WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT,
      totalTimeoutMs: options.totalTimeoutMs ?? WEBHOOK_TOTAL_TIMEOUT_MS_DEFAULT,
      bodyPrefixBytes: options.bodyPrefixBytes ?? WEBHOOK_BODY_PREFIX_BYTES_DEFAULT,
      responseBytesMax: options.responseBytesMax ?? WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT,
      responseHeaderBytesMax: options.responseHeaderBytesMax ??
        WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT,
      connectionsPerAddressMax: options.connectionsPerAddressMax ??
        WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
      idleConnectionMs,
      targetsCachedMax: options.targetsCachedMax ?? WEBHOOK_TARGETS_CACHED_MAX_DEFAULT,
      userAgent: options.userAgent ?? "edgemq-webhooks",
      nowMs: options.nowMs ?? (() => performance.now()),
      caCerts: options.caCerts ? [...options.caCerts] : undefined,
    };
    // One timer for every idle connection of every pool, instead of one per connection.
    this.#sweeper = setInterval(() => {
      const now = performance.now();
      for (const pool of this.#pools.values()) pool.closeIdle(now - idleConnectionMs);
    }, Math.max(50, Math.floor(idleConnectionMs / 4)));
    this.#sweeper.unref();
  }

  /** checkWebhookUrl(href) under this client's policy, remembered per href. */
  checkTarget(href: string): Checked<PreparedTarget> {
    const hit = this.#targets.get(href);
    if (hit !== undefined) return hit;
    const checked = checkWebhookUrl(href, this.#policy);
    const prepared: Checked<PreparedTarget> = checked.ok ? prepare(checked) : checked;
    if (this.#targets.size >= this.#settings.targetsCachedMax) {
      this.#targets.delete(this.#targets.keys().next().value!);
    }
    this.#targets.set(href, prepared);
    return prepared;
  }

  /** POSTs `body` to `url` over a connection to `address`; never throws for the network. */
  postPinned(request: PinnedPostRequest): Promise<PostOutcome> {
    const nowMs = this.#settings.nowMs;
    const startMs = nowMs();
    const refused = (code: WebhookDeliveryErrorCode, message: string, cause?: unknown) =>
      Promise.resolve<PostFailure>({
        ok: false,
        error: new WebhookDeliveryError(code, message, cause === undefined ? {} : { cause }),
        latencyMs: nowMs() - startMs,
      });
    if (this.#closed) return refused("aborted", "Cannot POST: the webhook client is closed");
    if (request.signal?.aborted) return refused("aborted", "Cannot POST: aborted before start");
    // URL and address are checked again on every request.
    const href = request.url instanceof URL ? request.url.href : request.url;
    const target = this.checkTarget(href);
    if (!target.ok) return refused("refused-url", target.error.message, target.error);
    const vetted = this.#vets.vet(target.host, request.address.address);
    if (!vetted.ok) return refused("refused-address", vetted.error.message, vetted.error);
    const bytes = requestBytes(target, request, this.#settings.userAgent);
    if (typeof bytes === "string") return refused("network", bytes);
    const pool = this.#pool(target, vetted.address);
    return new Promise((resolve) => {
      const attempt = new Attempt(pool, bytes, request, startMs, (outcome) => {
        this.#inflight.delete(attempt);
        resolve(outcome);
      });
      this.#inflight.add(attempt);
      pool.run(attempt);
    });
  }

  /** Closes pooled connections and aborts requests in flight; resolves when all are closed. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const attempt of this.#inflight) attempt.fail("aborted", "The webhook client was closed");
    const closing = [...this.#pools.values(), ...this.#retired].map((pool) => pool.destroy());
    this.#pools.clear();
    this.#retired.clear();
    await Promise.all(closing);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #pool(target: PreparedTarget, address: VettedAddress): Pool {
    const key = `${target.url.origin} ${address.address}`;
    const hit = this.#pools.get(key);
    if (hit !== undefined) return hit;
    if (this.#pools.size >= this.#settings.targetsCachedMax) {
      const [oldestKey, oldest] = this.#pools.entries().next().value!;
      this.#pools.delete(oldestKey);
      oldest.retire(); // lets its requests in flight and queued finish
      for (const pool of this.#retired) if (pool.finished) this.#retired.delete(pool);
      this.#retired.add(oldest);
    }
    const pool = new Pool(this.#settings, target, address);
    this.#pools.set(key, pool);
    return pool;
  }
}

/** The whole request to `target`, head and body, as one buffer; or why it cannot be sent. */
function requestBytes(
  target: PreparedTarget,
  request: PinnedPostRequest,
  userAgent: string,
): Uint8Array | string {
  const body = typeof request.body === "string" ? Buffer.from(request.body) : request.body;
  let head = `POST ${target.path} HTTP/1.1\r\nhost: ${target.url.host}\r\n`;
  let agent = false;
  const given = request.headers ?? {};
  for (const name of Object.keys(given)) {
    const value = given[name];
    const lower = name.toLowerCase();
    if (NOT_OURS.has(lower)) continue;
    if (!TOKEN.test(name) || BAD_VALUE.test(value)) return `Cannot send header ${name}`;
    if (lower === "user-agent") agent = true;
    head += `${name}: ${value}\r\n`;
  }
  if (!agent) head += `user-agent: ${userAgent}\r\n`;
  head += `content-length: ${body.byteLength}\r\n\r\n`;
  const headBytes = Buffer.byteLength(head, "latin1");
  const out = Buffer.allocUnsafe(headBytes + body.byteLength);
  out.write(head, 0, "latin1");
  out.set(body, headBytes);
  return out;
}

/** The connections to one origin at one vetted address, and the attempts waiting for one. */
class Pool {
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  #waiting: Attempt[] = [];
  #retired = false;

  /** `target` is the first URL of this origin and address; others share its connections. */
  constructor(
    readonly settings: Settings,
    readonly target: PreparedTarget,
    readonly address: VettedAddress,
  ) {}

  /** Starts `attempt` on an idle connection, a new one, or queues it. */
  run(attempt: Attempt): void {
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle.start(attempt);
    if (this.#all.size < this.settings.connectionsPerAddressMax) {
      return void this.#dial(attempt);
    }
    this.#waiting.push(attempt);
  }

  /** A connection finished its response and may carry another (a queued one first, also
   * in a retired pool: requests it accepted are served). */
  release(connection: Connection): void {
    while (this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      if (!next.settled) return connection.start(next);
    }
    if (this.#retired) return void connection.destroy();
    connection.idleSince = performance.now();
    this.#idle.push(connection);
  }

  /** A connection is gone (closed, failed, or dropped mid-response). */
  forget(connection: Connection): void {
    this.#all.delete(connection);
    const i = this.#idle.indexOf(connection);
    if (i >= 0) this.#idle.splice(i, 1);
    // A queued attempt takes the freed slot (destroy() empties the queue first).
    while (this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      if (!next.settled) return void this.#dial(next);
    }
  }

  closeIdle(before: number): void {
    while (this.#idle.length > 0 && this.#idle[0].idleSince < before) {
      this.#idle.shift()!.destroy();
    }
  }

  /** No new work: idle connections close now, busy ones once the queue is served. */
  retire(): void {
    this.#retired = true;
    for (const c of [...this.#idle]) c.destroy();
  }

  /** `attempt` again, on a new connection (its reused one was stale), ahead of the queue. */
  redial(attempt: Attempt): void {
    if (attempt.settled) return;
    if (this.#all.size < this.settings.connectionsPerAddressMax) this.#dial(attempt);
    else this.#waiting.unshift(attempt);
  }

  /** Retired and with nothing left: the client may forget it. */
  get finished(): boolean {
    return this.#retired && this.#all.size === 0 && this.#waiting.length === 0;
  }

  /** Closes every connection; resolves when their sockets have closed. */
  destroy(): Promise<void> {
    this.#retired = true;
    this.#waiting = [];
    const closed = [...this.#all].map((c) => c.destroy());
    return Promise.all(closed).then(() => {});
  }

  /** TCP (and TLS) to the vetted address under the connect deadline, for `attempt`. */
  #dial(attempt: Attempt): void {
    const { target, address, settings } = this;
    const common = {
      host: address.address,
      family: address.family,
      port: target.port,
      lookup: pinnedLookup(address),
    };
    let socket: net.Socket;
    try {
      socket = target.isHttps
        ? tls.connect({
          ...common,
          servername: target.servername,
          ALPNProtocols: ["http/1.1"],
          ...(settings.caCerts ? { ca: settings.caCerts } : {}),
        })
        : net.connect(common);
    } catch (error) {
      // Bun throws here for a bad CA bundle; Deno reports it as a socket error.
      const e = error as Error & { code?: string };
      return attempt.fail(classify(e, false), e.message, e);
    }
    socket.setNoDelay(true);
    const connection = new Connection(this, socket, attempt);
    this.#all.add(connection);
    const ms = settings.connectTimeoutMs;
    const timer = setTimeout(() => {
      attempt.fail("connect-timeout", `Not connected within ${ms} ms`);
      connection.destroy();
    }, ms);
    socket.once("close", () => clearTimeout(timer));
    socket.once(target.isHttps ? "secureConnect" : "connect", () => {
      clearTimeout(timer);
      connection.connected();
      // The attempt may have given up meanwhile: the connection serves the next one.
      if (attempt.settled) this.release(connection);
      else connection.start(attempt);
    });
  }
}

const enum Phase {
  /** Reading the status line and headers. */
  Head,
  /** Reading `remaining` bytes of a Content-Length body. */
  Length,
  /** Reading a chunk-size line. */
  ChunkSize,
  /** Reading `remaining` bytes of chunk data. */
  ChunkData,
  /** Reading the CRLF after chunk data. */
  ChunkEnd,
  /** Reading trailer lines up to the empty one. */
  Trailers,
  /** Reading until the server closes (no length, no chunking). */
  UntilClose,
}

/** One keep-alive connection: writes one request at a time and parses its response. */
class Connection {
  requests = 0;
  idleSince = 0;
  #attempt: Attempt | undefined;
  #phase = Phase.Head;
  #remaining = 0;
  #keepAlive = true;
  /** Bytes of an unfinished head or line (#gather), and how many are used. */
  #partial: Buffer | undefined;
  #partialLength = 0;
  /** Head bytes of this response so far, 1xx heads included. */
  #headBytes = 0;
  /** Bytes received since the current request was written. */
  #received = 0;
  readonly #closed: Promise<void>;
  #gone = false;
  /** Set when a response completes inside #onData. */
  #completed = false;

  /** The attempt this connection was dialled for, until it connects. */
  #dialFor: Attempt | undefined;

  constructor(readonly pool: Pool, readonly socket: net.Socket, dialFor: Attempt) {
    this.#dialFor = dialFor;
    this.#closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("end", () => this.#onEnd());
    socket.on("error", (error) => this.#onError(error));
    socket.once("close", () => this.#onError(new Error("Connection closed")));
  }

  connected(): void {
    this.#dialFor = undefined;
  }

  start(attempt: Attempt): void {
    this.#attempt = attempt;
    this.#phase = Phase.Head;
    this.#keepAlive = true;
    this.#headBytes = 0;
    this.#partialLength = 0;
    this.#received = 0;
    attempt.begin(this, this.requests++ > 0);
    this.socket.write(attempt.bytes);
  }

  /** Destroys the socket; resolves once it has closed. */
  destroy(): Promise<void> {
    this.#drop();
    this.socket.destroy();
    return this.#closed;
  }

  #drop(): void {
    if (this.#gone) return;
    this.#gone = true;
    this.pool.forget(this);
  }

  #onData(chunk: Buffer): void {
    this.#received += chunk.length;
    const attempt = this.#attempt;
    if (attempt === undefined) {
      // Nothing was asked: a server that talks out of turn is not reused.
      this.destroy();
      return;
    }
    let at = 0;
    while (at < chunk.length && this.#attempt === attempt) {
      switch (this.#phase) {
        case Phase.Head:
          at = this.#readHead(attempt, chunk, at);
          break;
        case Phase.Length:
        case Phase.ChunkData: {
          // `remaining` bytes of body; then the response ends, or the chunk's line end.
          const take = Math.min(this.#remaining, chunk.length - at);
          this.#remaining -= take;
          if (!attempt.data(chunk.subarray(at, at + take))) return this.#capped();
          at += take;
          if (this.#remaining > 0) break;
          if (this.#phase === Phase.Length) this.#complete();
          else this.#phase = Phase.ChunkEnd;
          break;
        }
        case Phase.UntilClose:
          if (!attempt.data(at === 0 ? chunk : chunk.subarray(at))) return this.#capped();
          at = chunk.length;
          break;
        case Phase.ChunkEnd:
        case Phase.ChunkSize:
        case Phase.Trailers:
          at = this.#readLine(attempt, chunk, at);
          break;
      }
    }
    if (!this.#completed) return;
    this.#completed = false;
    // Bytes past the end of the response: not a server we can keep talking to.
    if (at < chunk.length || !this.#keepAlive || this.#gone || this.socket.readableEnded) {
      this.destroy();
    } else this.pool.release(this);
  }

  /**
   * Bytes of an unfinished head or line, gathered without re-copying: `bytes` has room for
   * `limit` plus a terminator, and only new bytes are searched. Returns where the
   * terminator (a bare or CR LF line end; an empty line for a head) ends in the gathered
   * bytes and how many of `chunk` (from `at`) that took; "more" to wait for another chunk;
   * "over" past `limit`.
   */
  #gather(
    chunk: Buffer,
    at: number,
    limit: number,
    head: boolean,
  ): { bytes: Buffer; end: number; next: number; took: number } | "more" | "over" {
    const had = this.#partialLength;
    let bytes: Buffer;
    let from: number;
    if (had === 0) {
      bytes = chunk.subarray(at);
      from = 0;
    } else {
      const room = this.#partial!.length - had;
      const take = Math.min(room, chunk.length - at);
      chunk.copy(this.#partial!, had, at, at + take);
      bytes = this.#partial!.subarray(0, had + take);
      from = Math.max(0, had - 2);
    }
    const found = head ? headEnd(bytes, from) : lineEnd(bytes, from);
    if (found === undefined) {
      if (bytes.length > limit) return "over";
      if (had === 0) {
        this.#partial ??= Buffer.allocUnsafe(this.pool.settings.responseHeaderBytesMax + 4);
        if (this.#partial.length < limit + 4) this.#partial = Buffer.allocUnsafe(limit + 4);
        bytes.copy(this.#partial, 0);
      }
      this.#partialLength = bytes.length;
      return "more";
    }
    this.#partialLength = 0;
    return { bytes, end: found[0], next: found[1], took: found[1] - had };
  }

  /** Gathers the head; on its end, reads the status and framing headers. */
  #readHead(attempt: Attempt, chunk: Buffer, at: number): number {
    const limit = this.pool.settings.responseHeaderBytesMax;
    const got = this.#gather(chunk, at, limit - this.#headBytes, true);
    if (got === "more") return chunk.length;
    if (got === "over" || this.#headBytes + got.end > limit) {
      return this.#broken(`response head past ${limit} bytes`);
    }
    this.#headBytes += got.next;
    const consumed = at + got.took;
    const head = got.bytes.toString("latin1", 0, got.end);
    const m = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [^\r\n]*)?\r?(?:\n|$)/.exec(head);
    if (m === null) return this.#broken("malformed status line");
    const status = Number(m[2]);
    if (status < 200) {
      // Informational (103 Early Hints, a stray 100): the real response follows.
      if (status === 101) return this.#broken("unexpected 101 Switching Protocols");
      return consumed;
    }
    const http10 = m[1] === "0";
    let length = -1;
    let codings: string[] | undefined;
    this.#keepAlive = !http10;
    const kept: Partial<Record<KeptHeaderName, string>> = {};
    let lineStart = head.indexOf("\n") + 1;
    while (lineStart > 0 && lineStart < head.length) {
      let lineEnd = head.indexOf("\n", lineStart);
      if (lineEnd < 0) lineEnd = head.length;
      const colon = head.indexOf(":", lineStart);
      if (colon < 0 || colon > lineEnd) return this.#broken("malformed header line");
      const name = head.slice(lineStart, colon).toLowerCase();
      const value = head.slice(
        colon + 1,
        head.charCodeAt(lineEnd - 1) === 13 ? lineEnd - 1 : lineEnd,
      ).trim();
      if (name === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length >= 0 && length !== Number(value))) {
          return this.#broken("bad content-length");
        }
        length = Number(value);
      } else if (name === "transfer-encoding") {
        for (const coding of value.split(",")) (codings ??= []).push(coding.trim().toLowerCase());
      } else if (name === "connection") {
        if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) this.#keepAlive = false;
        else if (http10 && /(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) {
          this.#keepAlive = true;
        }
      } else if ((KEPT_HEADERS as readonly string[]).includes(name)) {
        const prior = kept[name as KeptHeaderName];
        kept[name as KeptHeaderName] = (prior === undefined ? value : `${prior}, ${value}`)
          .slice(0, KEPT_HEADER_CHARS_MAX);
      }
      lineStart = lineEnd + 1;
    }
    attempt.response(status, kept);
    if (status === 204 || status === 304) {
      // No body, whatever the framing headers say (RFC 9112 §6.3).
      this.#complete();
    } else if (codings !== undefined) {
      // Chunked must be the final coding, once (§6.3); other codings are not decoded (the
      // body is only logged). With Content-Length too, or on HTTP/1.0, the framing is
      // suspect: read it chunked, then close.
      if (codings.at(-1) !== "chunked" || codings.indexOf("chunked") !== codings.length - 1) {
        return this.#broken(`unsupported transfer-encoding ${codings.join(", ")}`);
      }
      if (length >= 0 || http10) this.#keepAlive = false;
      this.#phase = Phase.ChunkSize;
    } else if (length === 0) {
      this.#complete();
    } else if (length > 0) {
      this.#phase = Phase.Length;
      this.#remaining = length;
    } else {
      this.#phase = Phase.UntilClose;
      this.#keepAlive = false;
    }
    return consumed;
  }

  /** A chunk-size line, the line end after chunk data, or a trailer line; each counts
   * against responseBytesMax with the body. */
  #readLine(attempt: Attempt, chunk: Buffer, at: number): number {
    const got = this.#gather(chunk, at, CHUNK_LINE_BYTES_MAX, false);
    if (got === "more") {
      return attempt.framing(chunk.length - at) ? chunk.length : this.#cappedAt();
    }
    if (got === "over") return this.#broken(`chunk line past ${CHUNK_LINE_BYTES_MAX} bytes`);
    const consumed = at + got.took;
    if (!attempt.framing(got.took)) return this.#cappedAt();
    const line = got.bytes.toString("latin1", 0, got.end);
    if (this.#phase === Phase.ChunkEnd) {
      if (line !== "") return this.#broken("chunk data not followed by a line end");
      this.#phase = Phase.ChunkSize;
      return consumed;
    }
    if (this.#phase === Phase.Trailers) {
      if (line === "") this.#complete();
      return consumed;
    }
    const size = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(line);
    if (size === null) return this.#broken("malformed chunk size");
    this.#remaining = parseInt(size[1], 16);
    this.#phase = this.#remaining === 0 ? Phase.Trailers : Phase.ChunkData;
    return consumed;
  }

  /** #capped() from inside a read: ends the data loop. */
  #cappedAt(): number {
    this.#capped();
    return Number.MAX_SAFE_INTEGER;
  }

  /** The response is complete: settle it. #onData then reuses or closes the connection. */
  #complete(): void {
    const attempt = this.#attempt!;
    this.#attempt = undefined;
    this.#phase = Phase.Head;
    this.#completed = true;
    attempt.done(true);
  }

  /** The body passed responseBytesMax: settle with what was read and drop the connection. */
  #capped(): void {
    const attempt = this.#attempt!;
    this.#attempt = undefined;
    attempt.done(false);
    this.destroy();
  }

  /** A response we cannot parse: the attempt fails and the connection goes. */
  #broken(reason: string): number {
    const attempt = this.#attempt;
    this.#attempt = undefined;
    this.destroy();
    attempt?.fail("network", `malformed response: ${reason}`);
    return Number.MAX_SAFE_INTEGER;
  }

  #onEnd(): void {
    if (this.#attempt !== undefined && this.#phase === Phase.UntilClose) {
      this.#complete();
      this.#completed = false;
      this.destroy();
      return;
    }
    this.#onError(new Error("The server closed the connection"));
  }

  #onError(error: Error & { code?: string }): void {
    const attempt = this.#attempt;
    const dialFor = this.#dialFor;
    // A kept-alive connection the server closed as we reused it: the request got no byte
    // of answer, so it goes once more on a new connection instead of failing into the
    // retry ladder. Webhooks are at-least-once, and a repeat keeps its webhook-id.
    const stale = attempt !== undefined && this.requests > 1 && this.#received === 0 &&
      attempt.mayRepeat();
    this.#attempt = this.#dialFor = undefined;
    this.#drop();
    if (!this.socket.destroyed) this.socket.destroy();
    if (stale) this.pool.redial(attempt);
    else attempt?.fail(classify(error, true), error.message, error);
    dialFor?.fail(classify(error, false), error.message, error);
  }

  /** The attempt on this connection gave up (deadline, abort): the response is abandoned. */
  abandon(attempt: Attempt): void {
    if (this.#attempt !== attempt) return;
    this.#attempt = undefined;
    this.destroy();
  }
}

/** One POST: its bytes, deadline, abort signal and what its response said so far. */
class Attempt {
  settled = false;
  #connection: Connection | undefined;
  #reused = false;
  #status = 0;
  #headers: Partial<Record<KeptHeaderName, string>> = {};
  #pieces: Uint8Array[] = [];
  #kept = 0;
  #read = 0;
  #framing = 0;
  #repeated = false;
  readonly #timer: ReturnType<typeof setTimeout>;

  constructor(
    readonly pool: Pool,
    readonly bytes: Uint8Array,
    readonly input: PinnedPostRequest,
    readonly startMs: number,
    readonly resolve: (outcome: PostOutcome) => void,
  ) {
    const totalMs = input.totalTimeoutMs ?? pool.settings.totalTimeoutMs;
    this.#timer = setTimeout(
      () => this.fail("timeout", `No complete response within ${totalMs} ms`),
      totalMs,
    );
    input.signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  begin(connection: Connection, reused: boolean): void {
    this.#connection = connection;
    this.#reused = reused;
  }

  /** True the first time only: an attempt is repeated at most once (stale connection). */
  mayRepeat(): boolean {
    if (this.settled || this.#repeated) return false;
    this.#repeated = true;
    this.#connection = undefined;
    return true;
  }

  response(status: number, headers: Partial<Record<KeptHeaderName, string>>): void {
    this.#status = status;
    this.#headers = headers;
  }

  /** Body bytes; false once past responseBytesMax (the caller drops the connection). */
  data(chunk: Uint8Array): boolean {
    const s = this.pool.settings;
    if (this.#kept < s.bodyPrefixBytes) {
      // A copy, as a plain Uint8Array (Buffer#slice would be a view).
      const take = new Uint8Array(Math.min(chunk.length, s.bodyPrefixBytes - this.#kept));
      take.set(chunk.subarray(0, take.length));
      this.#pieces.push(take);
      this.#kept += take.length;
    }
    this.#read += chunk.length;
    return this.#read <= s.responseBytesMax;
  }

  /** Chunk lines and trailers: not body, but they count against responseBytesMax too, so
   * framing cannot stretch a response past it. False once past. */
  framing(bytes: number): boolean {
    this.#framing += bytes;
    return this.#read + this.#framing <= this.pool.settings.responseBytesMax;
  }

  done(fullyRead: boolean): void {
    this.#settle({
      ok: true,
      status: this.#status,
      headers: this.#headers,
      bodyPrefix: this.#pieces.length === 1 ? this.#pieces[0] : concat(this.#pieces, this.#kept),
      bodyBytesRead: this.#read,
      bodyFullyRead: fullyRead,
      connectionReused: this.#reused,
      latencyMs: this.pool.settings.nowMs() - this.startMs,
    });
  }

  readonly #onAbort = () => this.fail("aborted", "Aborted by the caller");

  fail(code: WebhookDeliveryErrorCode, reason: string, cause?: unknown): void {
    if (this.settled) return;
    const error = new WebhookDeliveryError(
      code,
      `Cannot POST to ${this.#origin()}: ${reason}`,
      cause === undefined ? {} : { cause },
    );
    this.#settle({ ok: false, error, latencyMs: this.pool.settings.nowMs() - this.startMs });
    this.#connection?.abandon(this);
  }

  #origin(): string {
    const { address, family } = this.pool.address;
    const shown = family === 6 ? `[${address}]` : address;
    return `${this.pool.target.url.protocol}//${this.pool.target.url.host} via ${shown}`;
  }

  #settle(outcome: PostOutcome): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.#timer);
    this.input.signal?.removeEventListener("abort", this.#onAbort);
    this.resolve(outcome);
  }
}
