// The webhook transport egress.ts uses (issue #6): the same pinned POST as
// http_delivery.ts, on undici's Pool instead of node:http, which gave 1.4-1.9x the POSTs/s
// at 16 and 64 in flight on both Deno and Bun (bench/webhook/post_client_bench.ts; 1.15-1.3x
// one at a time). Types and helpers are http_delivery.ts's. Every guarantee is kept by
// construction:
// - pinned address: each Pool belongs to one origin and one vetted address, and its
//   `connect` dials that address only (net/tls.connect with `host: ip` and a lookup that
//   answers the pin); Host comes from the URL origin, SNI and the certificate check use
//   the URL's name;
// - no redirects and no proxy: `Pool.dispatch` has neither (they are interceptors and
//   EnvHttpProxyAgent in undici, both unused here), and the global dispatcher is not used;
// - deadlines: our connect timer in `dial` and our total timer per attempt, which covers
//   undici's per-phase headersTimeout and bodyTimeout; those are off (0) because past 1 s
//   undici runs them on a module-wide 499 ms ticker that outlives the request;
// - capped reads: the handler keeps the prefix and aborts the request (undici then
//   destroys the socket) past responseBytesMax.
//
// Bun resolves the bare specifier "undici" to a built-in stub (a fetch wrapper without
// Pool.dispatch or `connect`), so the package's own entry file is imported by path.
import net from "node:net";
import tls from "node:tls";
import { type buildConnector, Client, type Dispatcher, Pool } from "undici/index.js";
import {
  type Checked,
  checkWebhookUrl,
  type EgressPolicy,
  vetAddress,
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

/** What every Attempt and connection needs from its client. */
interface Settings {
  readonly connectTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly bodyPrefixBytes: number;
  readonly responseBytesMax: number;
  readonly userAgent: string;
  readonly nowMs: () => number;
  readonly caCerts: string[] | undefined;
  /** Called with every socket dialled, so close() can wait for it. */
  readonly track: (socket: net.Socket) => void;
}

/** One undici Client's connection: requests started on its current socket. */
interface Connection {
  requests: number;
}

/** Webhook POSTs with pinned addresses over undici keep-alive pools. */
export class UndiciWebhookClient {
  readonly #policy: EgressPolicy;
  readonly #settings: Settings;
  readonly #poolOptions: Pool.Options;
  /** One Pool per origin and vetted address; the oldest is closed past the bound. */
  readonly #pools = new Map<string, Pool>();
  readonly #sockets = new Map<net.Socket, Promise<void>>();
  readonly #inflight = new Set<Attempt>();
  readonly #targets = new Map<string, Checked<PreparedTarget>>();
  #closed = false;

  constructor(options: WebhookHttpClientOptions) {
    this.#policy = options.policy;
    this.#settings = {
      connectTimeoutMs: options.connectTimeoutMs ?? WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT,
      totalTimeoutMs: options.totalTimeoutMs ?? WEBHOOK_TOTAL_TIMEOUT_MS_DEFAULT,
      bodyPrefixBytes: options.bodyPrefixBytes ?? WEBHOOK_BODY_PREFIX_BYTES_DEFAULT,
      responseBytesMax: options.responseBytesMax ?? WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT,
      userAgent: options.userAgent ?? "edgemq-webhooks",
      nowMs: options.nowMs ?? (() => performance.now()),
      caCerts: options.caCerts ? [...options.caCerts] : undefined,
      track: (socket) => this.#track(socket),
    };
    const idleMs = options.idleConnectionMs ?? WEBHOOK_IDLE_CONNECTION_MS_DEFAULT;
    this.#poolOptions = {
      connections: options.connectionsPerAddressMax ?? WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
      pipelining: 1,
      allowH2: false,
      keepAliveTimeout: idleMs,
      keepAliveMaxTimeout: idleMs,
      maxHeaderSize: options.responseHeaderBytesMax ?? WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT,
      headersTimeout: 0,
      bodyTimeout: 0,
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
    // As in WebhookHttpClient: URL and address are checked again on every request.
    const href = request.url instanceof URL ? request.url.href : request.url;
    const target = this.checkTarget(href);
    if (!target.ok) return refused("refused-url", target.error.message, target.error);
    const vetted = vetAddress(target.host, request.address.address, this.#policy);
    if (!vetted.ok) return refused("refused-address", vetted.error.message, vetted.error);
    const pool = this.#pool(target, vetted.address);
    return new Promise((resolve) => {
      const attempt = new Attempt(this.#settings, target, vetted.address);
      this.#inflight.add(attempt);
      attempt.send(pool, request, startMs, (outcome) => {
        this.#inflight.delete(attempt);
        resolve(outcome);
      });
    });
  }

  /** Closes pooled connections and aborts requests in flight; resolves when all are closed. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const attempt of this.#inflight) attempt.abort("The webhook client was closed");
    const destroyed = [...this.#pools.values()].map((pool) => pool.destroy());
    this.#pools.clear();
    for (const socket of this.#sockets.keys()) socket.destroy();
    await Promise.all([...destroyed, ...this.#sockets.values()]);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #pool(target: PreparedTarget, address: VettedAddress): Pool {
    const key = `${target.url.origin} ${address.address}`;
    const hit = this.#pools.get(key);
    if (hit !== undefined) return hit;
    if (this.#pools.size >= WEBHOOK_TARGETS_CACHED_MAX_DEFAULT) {
      const [oldestKey, oldest] = this.#pools.entries().next().value!;
      this.#pools.delete(oldestKey);
      void oldest.close(); // lets its requests in flight finish
    }
    const settings = this.#settings;
    const pool = new Pool(target.url.origin, {
      ...this.#poolOptions,
      factory: (origin, options) => new PinnedClient(origin, options, settings, target, address),
    });
    this.#pools.set(key, pool);
    return pool;
  }

  #track(socket: net.Socket): void {
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    this.#sockets.set(socket, closed.then(() => void this.#sockets.delete(socket)));
  }
}

/** An undici Client whose every connection goes to the vetted address, and which tells
 * each Attempt which connection carries it (for connectionReused). */
class PinnedClient extends Client {
  readonly #connection: Connection = { requests: 0 };

  constructor(
    origin: URL,
    options: object,
    settings: Settings,
    target: PreparedTarget,
    address: VettedAddress,
  ) {
    super(origin, {
      ...options,
      connect: (_options, callback) => {
        this.#connection.requests = 0;
        return dial(settings, target, address, callback);
      },
    });
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
    (handler as Attempt).connection = this.#connection;
    return super.dispatch(options, handler);
  }
}

type DialCallback = buildConnector.Callback;

/** TCP (and TLS) to the vetted address, under the connect deadline. */
function dial(
  settings: Settings,
  target: PreparedTarget,
  address: VettedAddress,
  callback: DialCallback,
): net.Socket {
  const common = {
    host: address.address,
    family: address.family,
    port: target.port,
    lookup: pinnedLookup(address),
  };
  const socket = target.isHttps
    ? tls.connect({
      ...common,
      servername: target.servername,
      ALPNProtocols: ["http/1.1"],
      ...(settings.caCerts ? { ca: settings.caCerts } : {}),
    })
    : net.connect(common);
  settings.track(socket);
  socket.setNoDelay(true);
  let pending: DialCallback | undefined = callback;
  const ms = settings.connectTimeoutMs;
  const timer = setTimeout(() => {
    const error = Object.assign(new Error(`Not connected within ${ms} ms`), {
      code: CONNECT_TIMEOUT_CODE,
    });
    socket.destroy();
    pending?.(error, null);
    pending = undefined;
  }, ms);
  socket.once(target.isHttps ? "secureConnect" : "connect", () => {
    clearTimeout(timer);
    pending?.(null, socket);
    pending = undefined;
  });
  socket.on("error", (error) => {
    clearTimeout(timer);
    pending?.(error, null);
    pending = undefined;
  });
  return socket;
}

/** The code of the error our dial gives when its connect timer fires. */
const CONNECT_TIMEOUT_CODE = "UND_ERR_CONNECT_TIMEOUT";

/** One request, as undici's dispatch handler: deadlines, abort, capped read. */
class Attempt implements Dispatcher.DispatchHandler {
  /** Set by PinnedClient.dispatch before the request starts. */
  connection: Connection | undefined;
  #input!: PinnedPostRequest;
  #startMs = 0;
  #resolve!: (outcome: PostOutcome) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #started = false;
  #reused = false;
  #status = 0;
  #headers: Partial<Record<KeptHeaderName, string>> = {};
  #pieces: Uint8Array[] = [];
  #kept = 0;
  #read = 0;
  #totalTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly settings: Settings,
    readonly target: PreparedTarget,
    readonly address: VettedAddress,
  ) {}

  send(
    pool: Pool,
    input: PinnedPostRequest,
    startMs: number,
    resolve: (outcome: PostOutcome) => void,
  ): void {
    this.#input = input;
    this.#startMs = startMs;
    this.#resolve = resolve;
    const s = this.settings;
    const headers: string[] = ["user-agent", s.userAgent];
    const given = input.headers;
    for (const name in given) {
      if (!NOT_OURS.has(name.toLowerCase())) headers.push(name, given[name]);
    }
    const totalMs = input.totalTimeoutMs ?? s.totalTimeoutMs;
    this.#totalTimer = setTimeout(
      () => this.#fail("timeout", `No complete response within ${totalMs} ms`),
      totalMs,
    );
    input.signal?.addEventListener("abort", this.#onAbort, { once: true });
    // Host comes from the pool's origin (the URL's), content-length from the body.
    pool.dispatch({
      method: "POST",
      path: this.target.path,
      headers,
      body: input.body,
    }, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Settled while queued (abort, deadline): give the connection back at once.
    if (this.#settled) return controller.abort(new Error("Settled before start"));
    this.#controller = controller;
    this.#started = true;
    this.#reused = this.connection!.requests++ > 0;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.#status = statusCode;
    for (const name of KEPT_HEADERS) {
      const value = headers[name];
      if (value === undefined) continue;
      const text = typeof value === "string" ? value : value.join(", ");
      this.#headers[name] = text.slice(0, KEPT_HEADER_CHARS_MAX);
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Uint8Array): void {
    if (this.#settled) return;
    const s = this.settings;
    if (this.#kept < s.bodyPrefixBytes) {
      const take = chunk.subarray(0, s.bodyPrefixBytes - this.#kept);
      this.#pieces.push(take);
      this.#kept += take.length;
    }
    this.#read += chunk.length;
    if (this.#read > s.responseBytesMax) {
      // Draining more would let a receiver hold us; a fresh connection is cheaper.
      this.#done(false);
      controller.abort(new Error("Response body past responseBytesMax"));
    }
  }

  onResponseEnd(): void {
    this.#done(true);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    const code = (error as { code?: string }).code === CONNECT_TIMEOUT_CODE
      ? "connect-timeout"
      : classify(error, this.#started);
    this.#fail(code, error.message, error);
  }

  readonly #onAbort = () => this.abort("Aborted by the caller");

  abort(reason: string): void {
    this.#fail("aborted", reason);
  }

  #done(fullyRead: boolean): void {
    this.#settle({
      ok: true,
      status: this.#status,
      headers: this.#headers,
      bodyPrefix: concat(this.#pieces, this.#kept),
      bodyBytesRead: this.#read,
      bodyFullyRead: fullyRead,
      connectionReused: this.#reused,
      latencyMs: this.settings.nowMs() - this.#startMs,
    });
  }

  #fail(code: WebhookDeliveryErrorCode, reason: string, cause?: unknown): void {
    if (this.#settled) return;
    const error = new WebhookDeliveryError(
      code,
      `Cannot POST to ${this.#origin()}: ${reason}`,
      cause === undefined ? {} : { cause },
    );
    this.#settle({ ok: false, error, latencyMs: this.settings.nowMs() - this.#startMs });
    // Not started yet: onRequestStart aborts it when a connection takes it.
    this.#controller?.abort(error);
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
    this.#input.signal?.removeEventListener("abort", this.#onAbort);
    this.#resolve(outcome);
  }
}
