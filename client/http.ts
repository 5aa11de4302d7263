// One HTTP exchange with the broker: bearer token, JSON or bytes, a timeout through an
// AbortSignal, retries with exponential backoff and jitter on 429 and 503 (honouring
// Retry-After), and problem+json answers turned into BrokerError. Web-standard APIs only.
import { BrokerError } from "./errors.ts";
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
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #retries: number;
  readonly #retryBaseMs: number;
  readonly #retryMaxMs: number;
  readonly #timeoutMs: number;
  readonly #mapError: (error: BrokerError) => unknown;

  constructor(options: TransportOptions) {
    this.base = options.baseUrl.replace(/\/$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#retries = options.retries ?? RETRIES_DEFAULT;
    this.#retryBaseMs = options.retryBaseMs ?? RETRY_BASE_MS_DEFAULT;
    this.#retryMaxMs = options.retryMaxMs ?? RETRY_MAX_MS_DEFAULT;
    this.#timeoutMs = options.timeoutMs ?? TIMEOUT_MS_DEFAULT;
    this.#mapError = options.mapError ?? ((e) => e);
  }

  async request<T>(
    method: string,
    path: string,
    init: RequestInit_ = {},
  ): Promise<T> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: Uint8Array | string | undefined = init.body;
    if (init.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(init.json);
    }
    const timeoutMs = init.timeoutMs ?? this.#timeoutMs;
    let signal = init.signal;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    if (timeoutMs > 0) {
      const deadline = new AbortController();
      timer = setTimeout(
        () =>
          deadline.abort(
            new DOMException("The call timed out", "TimeoutError"),
          ),
        timeoutMs + (init.holdMs ?? 0),
      );
      if (signal) {
        if (signal.aborted) deadline.abort(signal.reason);
        onAbort = () => deadline.abort(init.signal!.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }
      signal = deadline.signal;
    }
    try {
      return await this.#send<T>(method, path, headers, body, signal, init);
    } catch (err) {
      throw err instanceof BrokerError ? this.#mapError(err) : err;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      if (onAbort) init.signal!.removeEventListener("abort", onAbort);
    }
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
      try {
        res = await this.#fetch(`${this.base}${path}`, {
          method,
          headers,
          body: body as BodyInit | undefined,
          signal,
        });
      } catch (err) {
        if (signal?.aborted) throw signal.reason ?? err;
        if (repeatable && attempt < this.#retries) {
          await sleep(this.#backoff(attempt), signal);
          continue;
        }
        throw new BrokerError(
          "BROKER_UNAVAILABLE",
          `Cannot reach ${this.base}: ${message(err)}`,
          {
            cause: err,
          },
        );
      }
      if (res.status === 204) return undefined as T;
      if (
        (res.status === 429 || res.status === 503) && attempt < this.#retries
      ) {
        const asked = retryAfterMs(res.headers.get("retry-after"));
        if (asked === undefined || asked <= this.#retryMaxMs) {
          await res.body?.cancel();
          await sleep(asked ?? this.#backoff(attempt), signal);
          continue;
        }
      }
      const text = await res.text();
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

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
