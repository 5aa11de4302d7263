// The check service (RocketMQ's TransactionalMessageCheckService): asks the producer of
// every transaction left undecided transactionTimeoutMs after its half message was stored,
// then every transactionCheckIntervalMs, and gives up after transactionCheckMax checks
// (DISCARDED: an op record, nothing delivered, the half message findable until retention
// deletes it). Before each check the half message is re-put with one more check (so a
// crash or failover resumes at the right count, from the log), then the producer is asked
// through TransactionCheckChannels. It sleeps until the next check is due, at most one
// interval, and stops cleanly: stop() waits for the checks in flight.
import type { Logger } from "../log.ts";
import type { TransactionCheck, TransactionCheckAnswer } from "../protocol/transaction_types.ts";
import type { PendingTx } from "./transaction_log.ts";
import type { Transactions } from "./transactions.ts";

export interface CheckServiceDeps {
  transactions: Transactions;
  send(check: TransactionCheck): Promise<TransactionCheckAnswer | undefined>;
  settings: {
    transactionCheckIntervalMs: number;
    transactionCheckMax: number;
    transactionChecksInFlightMax: number;
  };
  nowMs: () => number;
  log: Logger;
  /** Called on every pass (check URL records are refreshed from here). */
  onPass?: () => void;
}

export class TransactionCheckService {
  readonly #d: CheckServiceDeps;
  readonly #inFlight = new Set<Promise<void>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = true;
  checksSent = 0;
  discarded = 0;

  constructor(deps: CheckServiceDeps) {
    this.#d = deps;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /** A transaction began: its first check may be sooner than the timer's. */
  wake(dueAt: number): void {
    if (this.#stopped) return;
    const inMs = Math.max(0, dueAt - this.#d.nowMs());
    if (this.#nextAt === undefined || dueAt < this.#nextAt) this.#schedule(inMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await Promise.allSettled([...this.#inFlight]);
  }

  #nextAt: number | undefined;

  #schedule(inMs: number): void {
    clearTimeout(this.#timer);
    this.#nextAt = this.#d.nowMs() + inMs;
    this.#timer = setTimeout(() => this.#pass(), inMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #pass(): void {
    this.#nextAt = undefined;
    if (this.#stopped) return;
    const { transactions, settings, nowMs } = this.#d;
    const now = nowMs();
    let next = now + settings.transactionCheckIntervalMs;
    for (const tx of transactions.pending.values()) {
      if (tx.checking || tx.deciding !== undefined) continue;
      if (tx.dueAt > now) {
        next = Math.min(next, tx.dueAt);
        continue;
      }
      if (this.#inFlight.size >= settings.transactionChecksInFlightMax) {
        next = now + 1;
        break;
      }
      const run = this.#checkOne(tx).finally(() => this.#inFlight.delete(run));
      this.#inFlight.add(run);
    }
    transactions.persistCheckOffset();
    this.#d.onPass?.();
    this.#schedule(Math.max(1, next - now));
  }

  async #checkOne(tx: PendingTx): Promise<void> {
    const { transactions, settings, log } = this.#d;
    tx.checking = true;
    try {
      if (await transactions.verify(tx) !== undefined) return;
      if (tx.checks >= settings.transactionCheckMax) {
        await transactions.decide(tx, "DISCARD");
        this.discarded++;
        log("warn", "transaction discarded after transactionCheckMax checks", {
          transactionId: tx.transactionId,
          producerGroup: tx.producerGroup,
          checks: tx.checks,
        });
        return;
      }
      let half;
      try {
        half = await transactions.recheck(tx);
      } catch (err) {
        // Its segment is gone (fileReservedTime): RocketMQ discards such a half message too.
        if ((err as { code?: string }).code !== "MESSAGE_NOT_FOUND") throw err;
        await transactions.decide(tx, "DISCARD");
        this.discarded++;
        log("warn", "transaction discarded: its half message was deleted by retention", {
          transactionId: tx.transactionId,
        });
        return;
      }
      this.checksSent++;
      const answer = await this.#d.send(transactions.checkOf(tx, half));
      if (answer === "COMMIT" || answer === "ROLLBACK") {
        await transactions.end(tx.transactionId, answer, { fromCheck: true });
      }
    } catch (err) {
      if (!this.#stopped) {
        log("warn", "transaction check failed", {
          transactionId: tx.transactionId,
          err: String(err),
        });
      }
    } finally {
      tx.checking = false;
    }
  }
}
