// One HTTP exchange with the broker: bearer token, JSON or bytes, a timeout through an
// AbortSignal, retries with exponential backoff and jitter on 429 and 503 (honouring
// Retry-After), and problem+json answers turned into BrokerError. Web-standard APIs only.
import { BrokerError } from "./errors.ts";
import { noteAnswer, noteFailure, refusedProvesNotSent } from "./pooled_origins.ts";
import type { SignalSource } from "./types.ts";

export interface TransportOptions {
  /** e.g. "http://127.0.0.1:8080" */
  baseUrl: string;
  /** Bearer API key. */
  token?: string;
  fetch?: typeof fetch;
  /** Retries after a 429 or 503 answer (and, for calls safe to repeat, after a network
   * error). Default RETRIES_DEFAULT; 0 turns retrying off. */
  retries?: number;
  /** First backoff, ms; doubled per retry, with full jitter. Default RETRY_BASE_MS_DEFAULT. */
  retryBaseMs?: number;
  /** Longest wait before a retry, ms: a Retry-After asking for more is not waited for (the
   * error carries retryAfterMs). Default RETRY_MAX_MS_DEFAULT. */
  retryMaxMs?: number;
  /** Whole-call deadline, ms, retries included; a held receive or pull adds its waitMs.
   * Default TIMEOUT_MS_DEFAULT: none (0), as a deadline costs an AbortSignal and a timer per
   * call (about a sixth of a produce's client CPU on Deno, bench/README.md); edge platforms
   * bound a request's time themselves. */
  timeoutMs?: number;
  /** Turns each error before it is thrown (e.g. into another error class). */
  mapError?: (error: BrokerError) => unknown;
  /** How long after the broker's last answer a refused connect may hide a request the
   * runtime's fetch already sent once on a pooled connection, ms (requestSent "unknown"
   * then, for calls started before a failure was seen: pooled_origins.ts). Default
   * POOLED_CONNECTION_WINDOW_MS_DEFAULT. */
  pooledConnectionWindowMs?: number;
}

/** Per call: the caller's abort signal and a deadline replacing the client's. */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export const RETRIES_DEFAULT = 3;
export const RETRY_BASE_MS_DEFAULT = 100;
export const RETRY_MAX_MS_DEFAULT = 10_000;
export const TIMEOUT_MS_DEFAULT = 0;

export interface RequestInit_ {
  headers?: Record<string, string>;
  body?: Uint8Array;
  json?: unknown;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Extra time the server may hold the request (a long poll's waitMs). */
  holdMs?: number;
  okStatuses?: number[];
  /** Safe to send again after a network error (GET, PUT, DELETE, an Idempotency-Key). */
  repeatable?: boolean;
}

export function signalOf(
  source: SignalSource | undefined,
): AbortSignal | undefined {
  return typeof source === "function" ? source() : source;
}

export class Transport {
  readonly base: string;
  readonly #origin: string;
  readonly #pooledWindowMs: number | undefined;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch | undefined;
  readonly #retries: number;
  readonly #retryBaseMs: number;
  readonly #retryMaxMs: number;
  readonly #timeoutMs: number;
  readonly #mapError: ((error: BrokerError) => unknown) | undefined;

  constructor(options: TransportOptions) {
    this.base = options.baseUrl.replace(/\/$/, "");
    this.#origin = URL.canParse(this.base) ? new URL(this.base).origin : this.base;
    this.#pooledWindowMs = options.pooledConnectionWindowMs;
    this.#token = options.token;
    this.#fetch = options.fetch;
    this.#retries = options.retries ?? RETRIES_DEFAULT;
    this.#retryBaseMs = options.retryBaseMs ?? RETRY_BASE_MS_DEFAULT;
    this.#retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS_DEFAULT;
    this.#timeoutMs = options.timeoutMs ?? TIMEOUT_MS_DEFAULT;
    this.#mapError = options.mapError;
  }

  request<T>(method: string, path: string, init: RequestInit_ = {}): Promise<T> {
    // Callers hand a fresh headers object: it is sent as is (no copy on the hot path).
    const headers: Record<string, string> = init.headers ?? {};
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: Uint8Array | string | undefined = init.body;
    if (init.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(init.json);
    }
    const timeoutMs = init.timeoutMs ?? this.#timeoutMs;
    if (timeoutMs > 0) return this.#withDeadline(method, path, headers, body, init, timeoutMs);
    const sent = this.#send<T>(method, path, headers, body, init.signal, init);
    return this.#mapError ? sent.catch((err) => this.#rethrow(err)) : sent;
  }

  async #withDeadline<T>(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Uint8Array | string | undefined,
    init: RequestInit_,
    timeoutMs: number,
  ): Promise<T> {
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException("The call timed out", "TimeoutError")),
      timeoutMs + (init.holdMs ?? 0),
    );
    const outer = init.signal;
    const onAbort = () => deadline.abort(outer!.reason);
    if (outer?.aborted) deadline.abort(outer.reason);
    else outer?.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.#send<T>(method, path, headers, body, deadline.signal, init);
    } catch (err) {
      return this.#rethrow(err);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    }
  }

  #rethrow(err: unknown): never {
    throw err instanceof BrokerError && this.#mapError ? this.#mapError(err) : err;
  }

  async #send<T>(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Uint8Array | string | undefined,
    signal: AbortSignal | undefined,
    init: RequestInit_,
  ): Promise<T> {
    const repeatable = init.repeatable ?? method !== "POST";
    for (let attempt = 0;; attempt++) {
      let res: Response;
      const startedAt = Date.now();
      try {
        const request: RequestInit = { method, headers, body: body as BodyInit | undefined };
        if (signal) request.signal = signal;
        // The global fetch, looked up per call (so a replaced one is used) and called unbound.
        res = await (this.#fetch ?? fetch)(`${this.base}${path}`, request);
      } catch (err) {
        if (signal?.aborted) throw signal.reason ?? err;
        // requestSent tells a caller that may try another broker whether this one can have
        // acted on the request: only a failed connect is sure it did not, and only when no
        // pooled connection can have carried it first (pooled_origins.ts).
        const notSent = connectFailed(err) &&
          refusedProvesNotSent(this.#origin, startedAt, this.#pooledWindowMs);
        noteFailure(this.#origin);
        if (repeatable && attempt < this.#retries) {
          await sleep(this.#backoff(attempt), signal);
          continue;
        }
        throw new BrokerError(
          "BROKER_UNAVAILABLE",
          `Cannot reach ${this.base}: ${message(err)}`,
          { cause: err, extensions: { requestSent: notSent ? false : "unknown" } },
        );
      }
      noteAnswer(this.#origin);
      if (res.status === 204) return undefined as T;
      let text: string | undefined;
      if (
        (res.status === 429 || res.status === 503) && attempt < this.#retries
      ) {
        const asked = retryAfterMs(res.headers.get("retry-after"));
        if (asked === undefined || asked <= this.#retryMaxMs) {
          // A 503 means nothing was done, except a gateway's BROKER_UNAVAILABLE after the
          // request reached the broker (requestSent "unknown"): a POST is not sent again
          // then (it may have been stored: a duplicate nobody asked for).
          if (repeatable || res.status === 429) await res.body?.cancel();
          else if (!outcomeUnknown(text = await res.text())) text = undefined;
          if (text === undefined) {
            await sleep(asked ?? this.#backoff(attempt), signal);
            continue;
          }
        }
      }
      text ??= await res.text();
      const ok = res.ok || (init.okStatuses?.includes(res.status) ?? false);
      let value: unknown;
      try {
        value = text ? JSON.parse(text) : undefined;
      } catch {
        throw new BrokerError(
          res.status >= 500 ? "BROKER_UNAVAILABLE" : "BAD_REQUEST",
          `Broker answered ${res.status} with a body that is not JSON`,
          { status: res.status },
        );
      }
      if (ok) return value as T;
      throw BrokerError.fromProblem(
        (value ?? {}) as Record<string, unknown>,
        res.status,
        retryAfterMs(res.headers.get("retry-after")),
      );
    }
  }

  #backoff(attempt: number): number {
    return Math.random() *
      Math.min(this.#retryMaxMs, this.#retryBaseMs * 2 ** attempt);
  }
}

/** True when a problem body says the request may have reached a broker (requestSent). */
function outcomeUnknown(text: string): boolean {
  try {
    return (JSON.parse(text) as { requestSent?: unknown } | null)?.requestSent === "unknown";
  } catch {
    return false;
  }
}

/** Milliseconds a Retry-After value asks for (RFC 9110 §10.2.3: seconds or an HTTP date). */
export function retryAfterMs(
  value: string | null,
  nowMs = Date.now(),
): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener("abort", abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/** Connection refused, a name or TLS handshake that failed: no byte of the request left.
 * Deno says "client error (Connect)" in its cause; Bun sets a code. Anything else (a reset
 * connection, a timeout) may have reached the server. */
export function connectFailed(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (/client error \(Connect\)/.test(e.message)) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && CONNECT_CODES.test(code)) return true;
  }
  return false;
}

const CONNECT_CODES =
  /^(ECONNREFUSED|ConnectionRefused|ENOTFOUND|EAI_AGAIN|FailedToOpenSocket|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|ERR_TLS_CERT)/;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
