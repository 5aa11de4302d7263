// Counts of durations by upper bound, for a latency histogram (the CommitLog's fdatasyncs):
// fixed bounds, one add per observation, read by the broker's metrics.

export interface DurationCounts {
  /** Upper bounds in ms, ascending; counts has one more slot, for +Inf. */
  boundsMs: readonly number[];
  counts: readonly number[];
  sumMs: number;
}

export class DurationHistogram {
  readonly #counts: number[];
  #sumMs = 0;

  constructor(readonly boundsMs: readonly number[]) {
    this.#counts = new Array(boundsMs.length + 1).fill(0);
  }

  observe(ms: number): void {
    let i = 0;
    while (i < this.boundsMs.length && ms > this.boundsMs[i]) i++;
    this.#counts[i]++;
    this.#sumMs += ms;
  }

  read(): DurationCounts {
    return { boundsMs: this.boundsMs, counts: [...this.#counts], sumMs: this.#sumMs };
  }
}

/** fdatasync durations: 0.1 ms to 5 s. */
export const FLUSH_BOUNDS_MS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000];
