// PullRequestHoldService (reference/rocketmq.md §10): a pull that finds nothing is
// parked, keyed by topic@queueId, and answered as soon as dispatch reports a message
// for that queue, or when its wait ends. Arrival notices come straight from dispatch,
// so a wake costs microseconds, not the 5 s check period RocketMQ also runs.

interface Hold {
  offset: number;
  tagCodes: Set<number> | undefined;
  wake: (reason: "arrived" | "timeout" | "closed") => void;
}

export class PullHoldService {
  #holds = new Map<string, Set<Hold>>();
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
    const key = `${topic}@${queueId}`;
    return new Promise((resolve) => {
      let set = this.#holds.get(key);
      if (!set) this.#holds.set(key, set = new Set());
      const onAbort = () => hold.wake("closed");
      const timer = setTimeout(() => hold.wake("timeout"), waitMs);
      const hold: Hold = {
        offset,
        tagCodes,
        wake: (reason) => {
          if (!set!.delete(hold)) return;
          this.#count--;
          if (set!.size === 0) this.#holds.delete(key);
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
    // Holds on queue -1 wait for any queue of the topic (POP receive).
    for (const hold of [...(this.#holds.get(`${topic}@-1`) ?? [])]) hold.wake("arrived");
    const set = this.#holds.get(`${topic}@${queueId}`);
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
    for (const set of [...this.#holds.values()]) for (const hold of [...set]) hold.wake("closed");
  }
}
