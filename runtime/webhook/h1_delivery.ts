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
// Its parts: h1_pool.ts (connections per origin and address), h1_connection.ts (one
// connection and its response parser), h1_attempt.ts (one POST), h1_wire.ts (bytes).
import { clearInterval, setInterval } from "node:timers";
import {
  type Checked,
  checkWebhookUrl,
  type EgressPolicy,
  VetMemo,
  type VettedAddress,
} from "./ssrf.ts";
import {
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
import { Attempt } from "./h1_attempt.ts";
import { Pool } from "./h1_pool.ts";
import type { Settings } from "./h1_settings.ts";
import { requestBytes } from "./h1_wire.ts";

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
