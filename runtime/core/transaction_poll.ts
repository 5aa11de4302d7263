// Checks waiting for producers that cannot take inbound calls: they long-poll
// GET /v1/producer-groups/{group}/transaction-checks and answer each check with
// POST /v1/transactions/{id}/commit|rollback (no answer means UNKNOWN). One bounded queue
// per group; a poll takes what is queued or waits for the next check, its wait, or its
// client going away.
import { BrokerError } from "../protocol/errors.ts";
import type { TransactionCheck } from "../protocol/transaction_types.ts";

interface Waiter {
  max: number;
  resolve: (checks: TransactionCheck[]) => void;
}

export class TransactionPollQueues {
  readonly #queued = new Map<string, Map<string, TransactionCheck>>();
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #queuedMax: number;
  readonly #waitingMax: number;
  #waiting = 0;
  #closed = false;

  /** queuedMax: checks kept per group (transactionChecksQueuedMax); waitingMax: polls held
   * at once, all groups (heldPullsMax, shared in spirit with pulls). */
  constructor(options: { queuedMax: number; waitingMax: number }) {
    this.#queuedMax = options.queuedMax;
    this.#waitingMax = options.waitingMax;
  }

  /** Queues `check` for the group's pollers; a newer check of one transaction replaces
   * the older, and a full queue drops its oldest. */
  offer(check: TransactionCheck): void {
    const group = check.producerGroup;
    const waiters = this.#waiters.get(group);
    if (waiters !== undefined && waiters.size > 0) {
      waiters.values().next().value!.resolve([check]); // its done() removes it
      return;
    }
    let q = this.#queued.get(group);
    if (q === undefined) this.#queued.set(group, q = new Map());
    q.delete(check.transactionId);
    q.set(check.transactionId, check);
    if (q.size > this.#queuedMax) q.delete(q.keys().next().value!);
  }

  /** Drops the queued check of a transaction that was decided. */
  decided(group: string, transactionId: string): void {
    this.#queued.get(group)?.delete(transactionId);
  }

  poll(group: string, max: number, waitMs: number, signal?: AbortSignal) {
    const q = this.#queued.get(group);
    if ((q !== undefined && q.size > 0) || waitMs <= 0 || this.#closed || signal?.aborted) {
      return Promise.resolve(this.#take(group, max));
    }
    if (this.#waiting >= this.#waitingMax) {
      return Promise.reject(
        new BrokerError(
          "TOO_MANY_WAITING",
          `Cannot hold another check poll: ${this.#waiting} wait already (heldPullsMax)`,
        ),
      );
    }
    this.#waiting++;
    return new Promise<TransactionCheck[]>((resolve) => {
      let waiters = this.#waiters.get(group);
      if (waiters === undefined) this.#waiters.set(group, waiters = new Set());
      const done = (checks: TransactionCheck[]) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (waiters!.delete(w)) this.#waiting--;
        if (waiters!.size === 0) this.#waiters.delete(group);
        resolve(checks);
      };
      const w: Waiter = { max, resolve: done };
      const onAbort = () => done([]);
      const timer = setTimeout(() => done([]), waitMs);
      signal?.addEventListener("abort", onAbort);
      waiters.add(w);
    });
  }

  /** Answers every waiting poll (graceful stop). */
  close(): void {
    this.#closed = true;
    for (const waiters of this.#waiters.values()) {
      for (const w of [...waiters]) w.resolve([]);
    }
  }

  #take(group: string, max: number): TransactionCheck[] {
    const q = this.#queued.get(group);
    if (q === undefined) return [];
    const out: TransactionCheck[] = [];
    for (const [id, check] of q) {
      if (out.length >= max) break;
      out.push(check);
      q.delete(id);
    }
    return out;
  }
}
