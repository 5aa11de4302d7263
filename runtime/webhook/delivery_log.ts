// The delivery log: the last attempts of each subscription, newest first, in memory.
// Bounded per subscription (webhookLogEntriesMax); a restart forgets it — the durable
// record of what happened to a message is its place in the queue, the retry topic or
// the DLQ, not this log.
import type { DeliveryAttempt } from "../protocol/types.ts";

/** Totals since start, per subscription (its group): the webhook metrics. */
export interface DeliveryTotals {
  attempts: number;
  failures: number;
  latencySumMs: number;
}

export class DeliveryLog {
  #rings = new Map<string, { entries: DeliveryAttempt[]; next: number }>();
  readonly totals = new Map<string, DeliveryTotals>();

  constructor(private readonly entriesMax: number) {}

  add(attempt: DeliveryAttempt): void {
    let t = this.totals.get(attempt.group);
    if (!t) this.totals.set(attempt.group, t = { attempts: 0, failures: 0, latencySumMs: 0 });
    t.attempts++;
    if (attempt.outcome !== "delivered") t.failures++;
    t.latencySumMs += attempt.latencyMs;
    let ring = this.#rings.get(attempt.group);
    if (!ring) this.#rings.set(attempt.group, ring = { entries: [], next: 0 });
    if (ring.entries.length < this.entriesMax) ring.entries.push(attempt);
    else ring.entries[ring.next] = attempt;
    ring.next = (ring.next + 1) % this.entriesMax;
  }

  /** Newest first; only one message's attempts when messageId is given. */
  list(group: string, query: { messageId?: string; limit?: number } = {}): DeliveryAttempt[] {
    const ring = this.#rings.get(group);
    if (!ring) return [];
    const limit = query.limit ?? this.entriesMax;
    const out: DeliveryAttempt[] = [];
    const n = ring.entries.length;
    for (let i = 1; i <= n && out.length < limit; i++) {
      const entry = ring.entries[(ring.next - i + n * 2) % n];
      if (query.messageId === undefined || entry.messageId === query.messageId) out.push(entry);
    }
    return out;
  }

  forget(group: string): void {
    this.#rings.delete(group);
    this.totals.delete(group);
  }
}
