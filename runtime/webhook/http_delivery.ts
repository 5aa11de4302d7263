// What a webhook POST promises, whatever carries it: options and their defaults, the
// request, the outcome, the stable error codes, and the helpers h1_delivery.ts (the
// transport) uses. Every POST connects to the address ssrf.ts vetted (reference/reliability.md
// §6.2 rule 3): the socket goes to that IP, while the Host header, TLS SNI and the
// certificate check use the URL's name. The name is never resolved again, so a DNS answer
// that changes after the check (rebinding) cannot redirect the delivery.
//
// Why not fetch (measured on Deno 2.9.6 and Bun 1.4.5, bench/webhook/post_client_bench.ts):
// both runtimes' fetch honours HTTP(S)_PROXY from the environment (rule 5 forbids it), and
// neither has a portable way to connect a TLS request to one IP while verifying the
// certificate for a name. node:net/node:tls take `host: ip, servername: name` on both.
import type { EgressPolicy, VettedAddress, WebhookTarget } from "./ssrf.ts";

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
  /** Checked URLs and connection pools kept; the oldest go first past this. Default
   * WEBHOOK_TARGETS_CACHED_MAX_DEFAULT. */
  readonly targetsCachedMax?: number;
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
  /** POST when absent (QStash deliveries may ask for another; the body is sent either way). */
  readonly method?: WebhookMethod;
}

export type WebhookMethod = "POST" | "PUT" | "PATCH" | "DELETE" | "GET";

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
