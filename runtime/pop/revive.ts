// The revive loop: wakes at the earliest deadline in flight (checkpoints.ts keeps them in a
// heap), takes what is due — those messages were not acked in time — and brings each back
// into %RETRY%{group}, or past retryMaxTimes buries it in %DLQ%{group}; ordered messages
// are retried in place. Then one "revived" record settles their handles for recovery.
import type { InFlight } from "./checkpoint.ts";
import type { PopCheckpoints } from "./checkpoints.ts";
import type { OrderlyPop } from "./orderly.ts";
import type { PopDeps } from "./pop_types.ts";
import { bury, requeue } from "./requeue.ts";

/**
 * A CK of the timer-wheel POP (before checkpoints were kept in memory): a timer due at the
 * message's deadline, body {g, t, q, o, c, ord?}, fired now, so the message was not acked in
 * time. It comes back (or is buried) as the old revive loop did. An orderly one is left
 * alone: its queue's pop offset never moved past it, so it is read again anyway.
 */
export function reviveLegacy(deps: PopDeps, body: Uint8Array): Promise<unknown> {
  let ck;
  try {
    ck = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return Promise.resolve();
  }
  if (typeof ck?.g !== "string" || !Number.isSafeInteger(ck?.c) || ck.ord) {
    return Promise.resolve();
  }
  const original = deps.store.lookMessageByOffset(ck.c);
  if (!original) return Promise.resolve(); // retention took it: nothing to bring back
  const reconsumeTimes = original.reconsumeTimes + 1;
  const max = deps.groupOf(ck.g)?.retryMaxTimes ?? deps.settings.retryMaxTimesDefault;
  return reconsumeTimes > max
    ? bury(deps, ck.g, original, reconsumeTimes)
    : requeue(deps, ck.g, original, reconsumeTimes, false);
}

/** A message whose return failed (a write was refused) is tried again this much later. */
const RETRY_AFTER_FAILURE_MS = 1000;

export class ReviveLoop {
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When #timer fires (Infinity when none is set). */
  #at = Infinity;
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(
    private readonly deps: PopDeps,
    private readonly orderly: OrderlyPop,
    private readonly checkpoints: PopCheckpoints,
  ) {
    checkpoints.onDeadline = (deadline) => this.#arm(deadline);
  }

  /** Starts with what recovery found (some may be due already). */
  start(): void {
    const next = this.checkpoints.nextDeadline();
    if (next !== undefined) this.#arm(next);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #arm(deadline: number) {
    if (this.#closed || this.#running || deadline >= this.#at) return;
    clearTimeout(this.#timer);
    this.#at = deadline;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#at = Infinity;
      this.#run();
    }, Math.max(0, deadline - this.deps.nowMs()));
  }

  #run() {
    this.#running = this.#reviveDue()
      .catch((err) => this.deps.log("error", "revive failed", { err: String(err) }))
      .finally(() => {
        this.#running = undefined;
        const next = this.checkpoints.nextDeadline();
        if (next !== undefined) this.#arm(next);
      });
  }

  async #reviveDue() {
    while (!this.#closed) {
      const now = this.deps.nowMs();
      const due = this.checkpoints.takeDue(now, this.deps.settings.popReviveBatchNums);
      if (due.length === 0) return;
      // The copies and the "revived" record are written in one turn, the record last: a
      // crash keeps the copies without the record (the message comes twice), never the
      // record without the copies.
      const puts = due.map((e) => this.#reviveOne(e));
      const recorded = this.checkpoints.recordRevived(due);
      const results = await Promise.allSettled(puts);
      const failed = due.filter((_, i) => results[i].status === "rejected");
      if (failed.length > 0) {
        const first = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
        this.deps.log("error", "bringing messages back failed", {
          count: failed.length,
          err: String(first.reason),
        });
        this.checkpoints.restore(failed, now + RETRY_AFTER_FAILURE_MS);
      }
      await recorded;
      this.checkpoints.released(due.filter((_, i) => results[i].status === "fulfilled"));
    }
  }

  #reviveOne(e: InFlight): Promise<unknown> {
    if (e.ord) return this.orderly.failed(e);
    const original = this.deps.store.lookMessageByOffset(e.c);
    if (!original) return Promise.resolve(); // retention took it: nothing to bring back
    const reconsumeTimes = original.reconsumeTimes + 1;
    if (
      reconsumeTimes >
        (this.deps.groupOf(e.g)?.retryMaxTimes ?? this.deps.settings.retryMaxTimesDefault)
    ) {
      return bury(this.deps, e.g, original, reconsumeTimes);
    }
    return requeue(this.deps, e.g, original, reconsumeTimes, false);
  }
}
