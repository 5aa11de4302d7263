// A subscription's ratePerSec as a token bucket: up to one second's tokens saved, one
// token per delivery started.
export class TokenBucket {
  #tokens: number;
  #tokensAt: number;

  constructor(readonly ratePerSec: number, nowMs: number) {
    this.#tokens = ratePerSec;
    this.#tokensAt = nowMs;
  }

  /** Token bucket: now if a token was taken, else when the next one is due. */
  take(now: number): number {
    const rate = this.ratePerSec;
    if (rate <= 0) return now;
    this.#tokens = Math.min(rate, this.#tokens + (now - this.#tokensAt) * rate / 1000);
    this.#tokensAt = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return now;
    }
    return now + Math.ceil((1 - this.#tokens) * 1000 / rate);
  }
}
