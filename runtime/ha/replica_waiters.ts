// SYNC producers waiting until enough slaves hold their message (ReplicationMaster's
// waitForReplicas): settled on each ACK, failed together when the master stops or is
// deposed, timed out by one timer at the earliest deadline.
import { ReplicationError } from "./replication_errors.ts";
import type { SlaveLink } from "./slave_link.ts";

interface Waiter {
  offset: number;
  slavesNeeded: number;
  deadlineMs: number;
  timeoutMs: number;
  resolve: () => void;
  reject: (err: ReplicationError) => void;
}

export class ReplicaWaiters {
  readonly #nowMs: () => number;
  /** The master's links (the same set, kept current by the master). */
  readonly #links: ReadonlySet<SlaveLink>;
  #waiters: Waiter[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAtMs = Infinity;

  constructor(nowMs: () => number, links: ReadonlySet<SlaveLink>) {
    this.#nowMs = nowMs;
    this.#links = links;
  }

  /** Waits until `slavesNeeded` slaves hold `offset`; rejects after `timeoutMs`. */
  wait(offset: number, slavesNeeded: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const deadlineMs = this.#nowMs() + timeoutMs;
      this.#waiters.push({ offset, slavesNeeded, deadlineMs, timeoutMs, resolve, reject });
      this.#armTimer(deadlineMs);
    });
  }

  /** Slaves (links past the handshake) whose ack is at or beyond `offset`. */
  holders(offset: number): number {
    let n = 0;
    for (const s of this.#links) if (s.state === "TRANSFER" && s.ackedOffset >= offset) n++;
    return n;
  }

  /** Resolves the waiters whose offset enough slaves hold now (after an ACK). */
  settle() {
    if (this.#waiters.length === 0) return;
    const acks: number[] = [];
    for (const s of this.#links) if (s.state === "TRANSFER") acks.push(s.ackedOffset);
    acks.sort((a, b) => b - a);
    const waiting: Waiter[] = [];
    for (const w of this.#waiters) {
      if (acks.length >= w.slavesNeeded && acks[w.slavesNeeded - 1] >= w.offset) w.resolve();
      else waiting.push(w);
    }
    this.#waiters = waiting;
    if (waiting.length === 0) this.#armTimer(Infinity);
  }

  /** One timer for all waiters, at the earliest deadline (rescanned only when it fires). */
  #armTimer(deadlineMs: number) {
    if (this.#waiters.length === 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAtMs = Infinity;
      return;
    }
    if (this.#timer !== undefined && deadlineMs >= this.#timerAtMs) return;
    clearTimeout(this.#timer);
    this.#timerAtMs = deadlineMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAtMs = Infinity;
      const now = this.#nowMs();
      const waiting: Waiter[] = [];
      for (const w of this.#waiters) {
        if (w.deadlineMs > now) {
          waiting.push(w);
          continue;
        }
        w.reject(
          new ReplicationError(
            "FLUSH_SLAVE_TIMEOUT",
            `Cannot confirm offset ${w.offset} on ${w.slavesNeeded} slaves within ${w.timeoutMs} ms: ${
              this.holders(w.offset)
            } hold it`,
          ),
        );
      }
      this.#waiters = waiting;
      if (waiting.length) {
        this.#armTimer(waiting.reduce((m, w) => Math.min(m, w.deadlineMs), Infinity));
      }
    }, Math.max(0, deadlineMs - this.#nowMs()));
  }

  /** Rejects every waiter with `err` (the master stopped or was deposed). */
  failAll(err: ReplicationError) {
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#armTimer(Infinity);
    for (const w of waiters) w.reject(err);
  }
}
