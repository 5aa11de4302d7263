// Idempotency-Key (IETF draft-ietf-httpapi-idempotency-key-header): a repeat within
// `windowMs` returns the first result and stores nothing; the same key with a different
// request is 422; a repeat while the first is still running waits for it. Bounded: past
// `keysMax` the oldest keys are forgotten first (a Map iterates in insertion order).
// Keys live in memory: a broker restart forgets them (documented in docs/api.md).
import { BrokerError } from "./protocol/errors.ts";

interface Entry<T> {
  fingerprint: string;
  expiresAtMs: number;
  result: Promise<T>;
}

export class IdempotencyCache<T> {
  #entries = new Map<string, Entry<T>>();

  constructor(
    private readonly options: { windowMs: number; keysMax: number; nowMs: () => number },
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Runs `work` once per key within the window. Returns [result, replayed]. A failed first
   * attempt is forgotten, so the client may retry with the same key.
   */
  async run(key: string, fingerprint: string, work: () => Promise<T>): Promise<[T, boolean]> {
    const now = this.options.nowMs();
    this.#evict(now);
    const seen = this.#entries.get(key);
    if (seen && seen.expiresAtMs > now) {
      if (seen.fingerprint !== fingerprint) {
        throw new BrokerError(
          "IDEMPOTENCY_CONFLICT",
          `Cannot reuse Idempotency-Key ${
            JSON.stringify(key)
          } for a different request within ${this.options.windowMs} ms`,
        );
      }
      return [await seen.result, true];
    }
    const result = work();
    const entry = { fingerprint, expiresAtMs: now + this.options.windowMs, result };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    try {
      return [await result, false];
    } catch (err) {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
      throw err;
    }
  }

  #evict(now: number) {
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAtMs > now && this.#entries.size < this.options.keysMax) break;
      this.#entries.delete(key);
    }
  }
}
