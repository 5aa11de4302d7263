// PullRequestHoldService (reference/rocketmq.md §10): a pull that finds nothing is
// parked, keyed by topic@queueId, and answered as soon as dispatch reports a message
// for that queue, or when its wait ends. Arrival notices come straight from dispatch,
// so a wake costs microseconds, not the 5 s check period RocketMQ also runs. Holds are
// kept by topic, then queue id: dispatch reports every queue a batch touched, and with
// 1,000 topics that is one notice per message, so a notice for a topic nobody waits on
// is one Map lookup (no key string built) — none at all while nothing is held.

interface Hold {
  offset: number;
  tagCodes: Set<number> | undefined;
  wake: (reason: "arrived" | "timeout" | "closed") => void;
}

export class PullHoldService {
  /** topic → queue id (-1: any queue of the topic) → the pulls held there. */
  #holds = new Map<string, Map<number, Set<Hold>>>();
  #count = 0;
  #closed = false;

  constructor(private readonly options: { holdsMax: number }) {}

  get held(): number {
    return this.#count;
  }

  /** False when holdsMax pulls already wait (the caller answers 429). */
  canHold(): boolean {
    return !this.#closed && this.#count < this.options.holdsMax;
  }

  /**
   * Waits until a message at or after `offset` arrives in the queue (with a matching tag
   * hash when filtering), `waitMs` passes, `signal` aborts, or the service closes.
   */
  hold(
    topic: string,
    queueId: number,
    offset: number,
    waitMs: number,
    tagCodes: Set<number> | undefined,
    signal?: AbortSignal,
  ): Promise<"arrived" | "timeout" | "closed"> {
    return new Promise((resolve) => {
      let byQueue = this.#holds.get(topic);
      if (!byQueue) this.#holds.set(topic, byQueue = new Map());
      let set = byQueue.get(queueId);
      if (!set) byQueue.set(queueId, set = new Set());
      const onAbort = () => hold.wake("closed");
      const timer = setTimeout(() => hold.wake("timeout"), waitMs);
      const hold: Hold = {
        offset,
        tagCodes,
        wake: (reason) => {
          if (!set!.delete(hold)) return;
          this.#count--;
          if (set!.size === 0 && byQueue!.get(queueId) === set) {
            byQueue!.delete(queueId);
            if (byQueue!.size === 0 && this.#holds.get(topic) === byQueue) {
              this.#holds.delete(topic);
            }
          }
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve(reason);
        },
      };
      set.add(hold);
      this.#count++;
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Dispatch's notice: `maxOffset` is the queue's new end; `tagsCode` the newest tag hash. */
  arriving(topic: string, queueId: number, maxOffset: number, tagsCode?: number): void {
    if (this.#count === 0) return;
    const byQueue = this.#holds.get(topic);
    if (byQueue === undefined) return;
    // Holds on queue -1 wait for any queue of the topic (POP receive).
    const any = byQueue.get(-1);
    if (any) { for (const hold of [...any]) hold.wake("arrived"); }
    const set = byQueue.get(queueId);
    if (!set) return;
    for (const hold of [...set]) {
      if (maxOffset <= hold.offset) continue;
      if (hold.tagCodes && tagsCode !== undefined && !hold.tagCodes.has(tagsCode)) continue;
      hold.wake("arrived");
    }
  }

  /** Answers every held pull now (graceful shutdown). */
  close(): void {
    this.#closed = true;
    for (const byQueue of [...this.#holds.values()]) {
      for (const set of [...byQueue.values()]) for (const hold of [...set]) hold.wake("closed");
    }
  }
}
