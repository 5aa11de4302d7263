// One webhook POST, connected to the address ssrf.ts vetted (reference/reliability.md
// §6.2 rule 3): the socket goes to that IP, while the Host header, TLS SNI and the
// certificate check use the URL's name. The name is never resolved again here, so a DNS
// answer that changes after the check (rebinding) cannot redirect the delivery.
//
// Why node:http(s) and not fetch (measured on Deno 2.9.6 and Bun 1.4.5, see
// bench/webhook/post_client_bench.ts): both runtimes' fetch honours HTTP(S)_PROXY from
// the environment (rule 5 forbids it), neither has a portable way to connect a TLS request
// to one IP while verifying the certificate for a name, and node:http with a keep-alive
// agent was as fast or faster on both. node:http(s) ignores proxy variables, never follows
// redirects, and takes `host: ip, servername: name, headers.host: name` on both runtimes.
// The agent pools connections by ip:port (and servername), so a pooled socket is always
// one to a vetted address.
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import {
  type Checked,
  checkWebhookUrl,
  type EgressPolicy,
  vetAddress,
  type VettedAddress,
  type WebhookTarget,
} from "./ssrf.ts";

/** Connecting (TCP, and the TLS handshake for https) may take this long, ms. */
export const WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT = 5_000;
/** Whole attempt, from start to the last body byte read; Standard Webhooks says 15–30 s. */
export const WEBHOOK_TOTAL_TIMEOUT_MS_DEFAULT = 15_000;
/** Response bytes kept for the delivery log. */
export const WEBHOOK_BODY_PREFIX_BYTES_DEFAULT = 1024;
/** Response bytes read at most; past this the connection is dropped instead of drained. */
export const WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT = 64 * 1024;
/** Largest response head accepted, bytes (Node's default maxHeaderSize). */
export const WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT = 16 * 1024;
/** Open connections to one address:port; more requests wait for one (inside the total). */
export const WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT = 64;
/** An idle pooled connection is closed after this, ms: below the 5 s keep-alive timeout of
 * Node's server, so we seldom write into a connection the receiver is closing. */
export const WEBHOOK_IDLE_CONNECTION_MS_DEFAULT = 4_000;
/** Checked URLs a client remembers (about one per subscription); the oldest go first past
 * this. A URL's check depends only on the URL and the client's policy, which never changes,
 * so a remembered result is the result a new check would give. */
export const WEBHOOK_TARGETS_CACHED_MAX_DEFAULT = 4096;
/** Response header values kept, characters each (they go to a log). */
export const KEPT_HEADER_CHARS_MAX = 256;
/** Response headers a delivery log or retry policy needs; the rest are dropped. */
export const KEPT_HEADERS = ["retry-after", "location", "content-type"] as const;

export type KeptHeaderName = (typeof KEPT_HEADERS)[number];

export type WebhookDeliveryErrorCode =
  | "refused-url" // the URL no longer passes checkWebhookUrl under this policy
  | "refused-address" // the address is not public unicast (nor allowlisted) for this URL
  | "connect" // TCP connect failed (refused, unreachable)
  | "connect-timeout" // TCP + TLS handshake took longer than connectTimeoutMs
  | "tls" // certificate or handshake failure
  | "timeout" // no complete response within totalTimeoutMs
  | "network" // the connection failed after it was made (reset, malformed response)
  | "aborted"; // the caller's signal fired, or the client was closed

/** A failed attempt. `code` is stable; the message names origin and address, never the
 * path or query (webhook URLs often carry tokens there). */
export class WebhookDeliveryError extends Error {
  constructor(readonly code: WebhookDeliveryErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WebhookDeliveryError";
  }
}

export interface WebhookHttpClientOptions {
  /** The same policy the URL was registered and its address vetted under. */
  readonly policy: EgressPolicy;
  /** Default WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT. */
  readonly connectTimeoutMs?: number;
  /** Default WEBHOOK_TOTAL_TIMEOUT_MS_DEFAULT; a request may pass its own. */
  readonly totalTimeoutMs?: number;
  /** Default WEBHOOK_BODY_PREFIX_BYTES_DEFAULT. */
  readonly bodyPrefixBytes?: number;
  /** Default WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT. */
  readonly responseBytesMax?: number;
  /** Default WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT. */
  readonly responseHeaderBytesMax?: number;
  /** Default WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT. */
  readonly connectionsPerAddressMax?: number;
  /** Default WEBHOOK_IDLE_CONNECTION_MS_DEFAULT. */
  readonly idleConnectionMs?: number;
  /** PEM roots trusted for https *instead of* the system's (tests). Default: system roots. */
  readonly caCerts?: readonly string[];
  /** Sent unless the request sets its own. Default "edgemq-webhooks". */
  readonly userAgent?: string;
  /** Monotonic ms for latencyMs (the platform clock). Default performance.now. */
  readonly nowMs?: () => number;
}

export interface PinnedPostRequest {
  /** The registered webhook URL; its name goes into Host and SNI. */
  readonly url: string | URL;
  /** From resolveAndVet(url host): the only address this request may connect to. */
  readonly address: VettedAddress;
  /** Sent as is: the exact bytes that were signed. */
  readonly body: string | Uint8Array;
  /** Content-Type, webhook-id, webhook-timestamp, webhook-signature, ... Host,
   * Content-Length, Connection and Transfer-Encoding are ours and are ignored here. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Aborts the attempt (shutdown); the outcome is an "aborted" failure. */
  readonly signal?: AbortSignal;
  /** Overrides the client's totalTimeoutMs for this request. */
  readonly totalTimeoutMs?: number;
}

export interface PostResponse {
  readonly ok: true;
  /** Any status, 3xx included: redirects are results, never followed. */
  readonly status: number;
  readonly headers: Readonly<Partial<Record<KeptHeaderName, string>>>;
  /** The first bodyPrefixBytes of the response body. */
  readonly bodyPrefix: Uint8Array;
  /** Body bytes read; above bodyPrefix.length when the rest was discarded. */
  readonly bodyBytesRead: number;
  /** False when the body passed responseBytesMax and the connection was dropped. */
  readonly bodyFullyRead: boolean;
  /** The request went over a pooled keep-alive connection. */
  readonly connectionReused: boolean;
  readonly latencyMs: number;
}

export interface PostFailure {
  readonly ok: false;
  readonly error: WebhookDeliveryError;
  readonly latencyMs: number;
}

export type PostOutcome = PostResponse | PostFailure;

export const NOT_OURS = new Set(["host", "content-length", "connection", "transfer-encoding"]);

/** A URL that passed checkWebhookUrl under the client's policy, with what every request to
 * it needs, worked out once. */
export interface PreparedTarget extends WebhookTarget {
  readonly isHttps: boolean;
  /** Request target: path and query. */
  readonly path: string;
  /** SNI and certificate name for https to a name; undefined otherwise. */
  readonly servername: string | undefined;
}

/** What one Attempt needs from its client. */
interface AttemptSettings {
  readonly connectTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly bodyPrefixBytes: number;
  readonly responseBytesMax: number;
  readonly responseHeaderBytesMax: number;
  readonly userAgent: string;
  readonly nowMs: () => number;
  readonly httpAgent: http.Agent;
  readonly httpsAgent: https.Agent;
  /** Called with every socket a request gets, so close() can wait for it. */
  readonly track: (socket: Socket) => void;
}

/** Webhook POSTs with pinned addresses over pooled keep-alive connections. */
export class WebhookHttpClient {
  readonly #policy: EgressPolicy;
  readonly #settings: AttemptSettings;
  /** Every socket handed to a request, with a promise of its close. */
  readonly #sockets = new Map<Socket, Promise<void>>();
  readonly #inflight = new Set<Attempt>();
  readonly #targets = new Map<string, Checked<PreparedTarget>>();
  #closed = false;

  constructor(options: WebhookHttpClientOptions) {
    this.#policy = options.policy;
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.connectionsPerAddressMax ?? WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
      timeout: options.idleConnectionMs ?? WEBHOOK_IDLE_CONNECTION_MS_DEFAULT,
    };
    this.#settings = {
      connectTimeoutMs: options.connectTimeoutMs ?? WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT,
      totalTimeoutMs: options.totalTimeoutMs ?? WEBHOOK_TOTAL_TIMEOUT_MS_DEFAULT,
      bodyPrefixBytes: options.bodyPrefixBytes ?? WEBHOOK_BODY_PREFIX_BYTES_DEFAULT,
      responseBytesMax: options.responseBytesMax ?? WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT,
      responseHeaderBytesMax: options.responseHeaderBytesMax ??
        WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT,
      userAgent: options.userAgent ?? "edgemq-webhooks",
      nowMs: options.nowMs ?? (() => performance.now()),
      httpAgent: new http.Agent(agentOptions),
      httpsAgent: new https.Agent({
        ...agentOptions,
        ...(options.caCerts ? { ca: [...options.caCerts] } : {}),
      }),
      track: (socket) => this.#track(socket),
    };
  }

  /** checkWebhookUrl(href) under this client's policy, remembered per href. */
  checkTarget(href: string): Checked<PreparedTarget> {
    const hit = this.#targets.get(href);
    if (hit !== undefined) return hit;
    const checked = checkWebhookUrl(href, this.#policy);
    const prepared: Checked<PreparedTarget> = checked.ok ? prepare(checked) : checked;
    if (this.#targets.size >= WEBHOOK_TARGETS_CACHED_MAX_DEFAULT) {
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
    // Registration checked the URL and resolveAndVet the address; both are checked again
    // (the URL under this client's policy, which registration may not have used) and the
    // address on every request, so the pair must belong together.
    const href = request.url instanceof URL ? request.url.href : request.url;
    const target = this.checkTarget(href);
    if (!target.ok) return refused("refused-url", target.error.message, target.error);
    const vetted = vetAddress(target.host, request.address.address, this.#policy);
    if (!vetted.ok) return refused("refused-address", vetted.error.message, vetted.error);
    return new Promise((resolve) => {
      const attempt = new Attempt(this.#settings, target, vetted.address);
      this.#inflight.add(attempt);
      attempt.send(request, startMs, (outcome) => {
        this.#inflight.delete(attempt);
        resolve(outcome);
      });
    });
  }

  /** Closes pooled connections and aborts requests in flight; resolves when all are closed. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const attempt of this.#inflight) attempt.abort("The webhook client was closed");
    this.#settings.httpAgent.destroy();
    this.#settings.httpsAgent.destroy();
    for (const socket of this.#sockets.keys()) socket.destroy();
    await Promise.all(this.#sockets.values());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #track(socket: Socket): void {
    if (this.#sockets.has(socket)) return;
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    this.#sockets.set(socket, closed.then(() => void this.#sockets.delete(socket)));
  }
}

/** One request's state machine: connect deadline, total deadline, abort, capped read. */
class Attempt {
  #input!: PinnedPostRequest;
  #startMs = 0;
  #resolve!: (outcome: PostOutcome) => void;
  #request: http.ClientRequest | undefined;
  #settled = false;
  #connected = false;
  #reused = false;
  #totalTimer: ReturnType<typeof setTimeout> | undefined;
  #connectTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly settings: AttemptSettings,
    readonly target: PreparedTarget,
    readonly address: VettedAddress,
  ) {}

  send(input: PinnedPostRequest, startMs: number, resolve: (outcome: PostOutcome) => void): void {
    this.#input = input;
    this.#startMs = startMs;
    this.#resolve = resolve;
    const s = this.settings;
    const body = typeof this.#input.body === "string"
      ? new TextEncoder().encode(this.#input.body)
      : this.#input.body;
    const target = this.target;
    const isHttps = target.isHttps;
    const headers: Record<string, string> = { "user-agent": s.userAgent };
    const given = this.#input.headers;
    for (const name in given) {
      const lower = name.toLowerCase();
      if (!NOT_OURS.has(lower)) headers[lower] = given[name];
    }
    headers["host"] = target.url.host;
    headers["content-length"] = String(body.byteLength);
    const totalMs = this.#input.totalTimeoutMs ?? s.totalTimeoutMs;
    this.#totalTimer = setTimeout(
      () => this.#fail("timeout", `No complete response within ${totalMs} ms`),
      totalMs,
    );
    this.#input.signal?.addEventListener("abort", this.#onAbort, { once: true });
    const options: https.RequestOptions = {
      method: "POST",
      host: this.address.address,
      family: this.address.family,
      port: target.port,
      path: target.path,
      headers,
      agent: isHttps ? s.httpsAgent : s.httpAgent,
      maxHeaderSize: s.responseHeaderBytesMax,
      // The name for SNI and the certificate check; an IP literal URL sends no SNI. One
      // object shape for every request keeps node:http's property loads monomorphic.
      servername: target.servername,
      // `host` is an IP, so no runtime should resolve; if one does, it gets the pin.
      lookup: pinnedLookup(this.address),
    };
    let request: http.ClientRequest;
    try {
      request = (isHttps ? https : http).request(options);
    } catch (cause) {
      // Header values with CR/LF or non-token names land here: the caller's input.
      this.#fail("network", "Cannot build the request (invalid header?)", cause);
      return;
    }
    this.#request = request;
    request.on("socket", (socket: Socket) => this.#onSocket(socket, isHttps));
    request.on("response", (response) => this.#onResponse(response));
    request.on(
      "error",
      (error) => this.#fail(classify(error, this.#connected), error.message, error),
    );
    request.end(body);
  }

  #onSocket(socket: Socket, isHttps: boolean): void {
    this.settings.track(socket);
    if (!socket.connecting) {
      this.#connected = true;
      this.#reused = true;
      return;
    }
    const ms = this.settings.connectTimeoutMs;
    this.#connectTimer = setTimeout(
      () => this.#fail("connect-timeout", `Not connected within ${ms} ms`),
      ms,
    );
    socket.once(isHttps ? "secureConnect" : "connect", () => {
      this.#connected = true;
      clearTimeout(this.#connectTimer);
    });
  }

  #onResponse(response: http.IncomingMessage): void {
    const s = this.settings;
    // Views of the first chunks, copied once at the end: a 1 KiB buffer per delivery
    // would cost more than the rest of the attempt (off-heap allocation, GC pressure).
    const pieces: Uint8Array[] = [];
    let kept = 0;
    let read = 0;
    const done = (fullyRead: boolean) => {
      this.#settle({
        ok: true,
        status: response.statusCode ?? 0,
        headers: keptHeaders(response.rawHeaders),
        bodyPrefix: concat(pieces, kept),
        bodyBytesRead: read,
        bodyFullyRead: fullyRead,
        connectionReused: this.#reused,
        latencyMs: s.nowMs() - this.#startMs,
      });
    };
    response.on("data", (chunk: Uint8Array) => {
      if (this.#settled) return;
      if (kept < s.bodyPrefixBytes) {
        const take = chunk.subarray(0, s.bodyPrefixBytes - kept);
        pieces.push(take);
        kept += take.length;
      }
      read += chunk.length;
      if (read > s.responseBytesMax) {
        // Draining more would let a receiver hold us; a fresh connection is cheaper.
        done(false);
        this.#request?.destroy();
      }
    });
    response.on("end", () => done(true));
    response.on("error", (error) => this.#fail("network", error.message, error));
  }

  readonly #onAbort = () => this.abort("Aborted by the caller");

  abort(reason: string): void {
    this.#fail("aborted", reason);
  }

  #fail(code: WebhookDeliveryErrorCode, reason: string, cause?: unknown): void {
    if (this.#settled) return;
    const error = new WebhookDeliveryError(
      code,
      `Cannot POST to ${this.#origin()}: ${reason}`,
      cause === undefined ? {} : { cause },
    );
    this.#settle({ ok: false, error, latencyMs: this.settings.nowMs() - this.#startMs });
    this.#request?.destroy(error);
  }

  #origin(): string {
    const { address, family } = this.address;
    const shown = family === 6 ? `[${address}]` : address;
    return `${this.target.url.protocol}//${this.target.url.host} via ${shown}`;
  }

  #settle(outcome: PostOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#totalTimer);
    clearTimeout(this.#connectTimer);
    this.#input.signal?.removeEventListener("abort", this.#onAbort);
    this.#resolve(outcome);
  }
}

/**
 * Milliseconds a Retry-After value asks us to wait (RFC 9110 §10.2.3: delay-seconds or an
 * HTTP-date), or undefined when absent or malformed. `wallNowMs` is the wall clock (the
 * platform's), needed only for the date form.
 */
export function retryAfterMs(value: string | undefined, wallNowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - wallNowMs);
}

export function concat(pieces: readonly Uint8Array[], length: number): Uint8Array {
  const joined = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    joined.set(piece, at);
    at += piece.length;
  }
  return joined;
}

// From rawHeaders (name, value, name, value, ...): reading `response.headers` would build
// an object of every header, per delivery, to keep three.
function keptHeaders(raw: readonly string[]): Partial<Record<KeptHeaderName, string>> {
  const kept: Partial<Record<KeptHeaderName, string>> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase() as KeptHeaderName;
    if (!KEPT_HEADERS.includes(name)) continue;
    const prior = kept[name];
    const text = prior === undefined ? raw[i + 1] : `${prior}, ${raw[i + 1]}`;
    kept[name] = text.slice(0, KEPT_HEADER_CHARS_MAX);
  }
  return kept;
}

type LookupCallback = (
  error: Error | null,
  address: string | { address: string; family: number }[],
  family?: number,
) => void;

export function pinnedLookup(address: VettedAddress) {
  return (_host: string, options: { all?: boolean }, callback: LookupCallback) => {
    if (options?.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  };
}

export function prepare(
  target: { readonly ok: true } & WebhookTarget,
): { ok: true } & PreparedTarget {
  const isHttps = target.url.protocol === "https:";
  return {
    ...target,
    isHttps,
    path: `${target.url.pathname}${target.url.search}`,
    servername: isHttps && !isIpLiteral(target.host) ? target.host : undefined,
  };
}

function isIpLiteral(host: string): boolean {
  return host.includes(":") || /^\d+\.\d+\.\d+\.\d+$/.test(host);
}

const TLS_ERROR = /CERT|TLS|SSL|SIGNATURE|UNABLE_TO_|HANDSHAKE/;

export function classify(
  error: Error & { code?: string },
  connected: boolean,
): WebhookDeliveryErrorCode {
  if (TLS_ERROR.test(error.code ?? "") || TLS_ERROR.test(error.message)) return "tls";
  return connected ? "network" : "connect";
}
