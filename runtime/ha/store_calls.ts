// Every call the lease keeper makes to its store (and to eligibility()) goes through
// here: bounded in time (leaseStoreCallTimeoutMs) and in number (storeCallsInFlightMax).
//
// A call that times out is not cancelled: KvPort has no cancel, and Deno's KV Connect
// client retries a call for as long as the host is unreachable. It stays counted until
// it settles, so a hanging store cannot pile up calls without bound, and whenIdle() lets
// the owner wait for them before closing the KV. Its outcome, if it ever comes, is
// ignored: to the keeper a timed-out write is ambiguous (it may have been applied).
import assert from "node:assert/strict";

export type StoreOutcome<T> =
  | { kind: "ok"; value: T }
  /** Threw or rejected; for a write, as ambiguous as a timeout. */
  | { kind: "failed"; error: unknown }
  | { kind: "timeout" }
  /** Not called: storeCallsInFlightMax calls are still pending. */
  | { kind: "busy" }
  /** Still pending when abandonAll() was called (the keeper is stopping). */
  | { kind: "abandoned" };

export interface StoreCallTimer {
  setTimer(ms: number, fn: () => void): () => void;
}

export class StoreCalls {
  readonly #inFlight = new Set<Promise<void>>();
  readonly #waiting = new Set<() => void>();

  constructor(
    readonly timer: StoreCallTimer,
    readonly limits: { leaseStoreCallTimeoutMs: number; storeCallsInFlightMax: number },
  ) {
    assert(limits.leaseStoreCallTimeoutMs > 0);
    assert(limits.storeCallsInFlightMax >= 1);
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  run<T>(call: () => Promise<T>): Promise<StoreOutcome<T>> {
    if (this.#inFlight.size >= this.limits.storeCallsInFlightMax) {
      return Promise.resolve({ kind: "busy" });
    }
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (error) {
      return Promise.resolve({ kind: "failed", error });
    }
    const settled: Promise<void> = pending.then(
      () => void this.#inFlight.delete(settled),
      () => void this.#inFlight.delete(settled),
    );
    this.#inFlight.add(settled);
    return new Promise((resolve) => {
      let done = false;
      const finish = (outcome: StoreOutcome<T>) => {
        if (done) return;
        done = true;
        cancelTimer();
        this.#waiting.delete(abandon);
        resolve(outcome);
      };
      const abandon = () => finish({ kind: "abandoned" });
      const cancelTimer = this.timer.setTimer(
        this.limits.leaseStoreCallTimeoutMs,
        () => finish({ kind: "timeout" }),
      );
      this.#waiting.add(abandon);
      pending.then(
        (value) => finish({ kind: "ok", value }),
        (error) => finish({ kind: "failed", error }),
      );
    });
  }

  /** Every caller still waiting gets "abandoned" now; their calls stay in flight. */
  abandonAll(): void {
    for (const abandon of [...this.#waiting]) abandon();
  }

  /** Resolves once no call is in flight (never, while a store hangs for good). */
  async whenIdle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }
}
