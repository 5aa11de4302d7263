// Flushing the CommitLog (reference/rocketmq.md §1, "Flushing").
//
// SYNC_FLUSH (GroupCommitService): an append waits until an fdatasync that started after
// its bytes were written has finished. While one sync is in flight, new appends queue up
// and share the next one, so a sync costs ~0.5 ms whatever the number of appenders.
// ASYNC_FLUSH (FlushRealTimeService): appends answer once written; a timer syncs.
//
// A failed fdatasync is final (fsyncgate, reference/reliability.md §4.3): the kernel may
// already have dropped the dirty pages, so a retry could "succeed" without the data.
// The flusher fails every waiter, refuses all later flushes, and the store stops taking
// writes. Never retried.
import { DurationHistogram, FLUSH_BOUNDS_MS } from "../duration_histogram.ts";
import { setImmediate } from "node:timers";
import { StoreError } from "../errors.ts";
import type { CommitLog } from "./commit_log.ts";

/** Everyone waiting on one fdatasync shares one promise: no object or promise per append. */
interface Batch {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
}

function newBatch(): Batch {
  let resolve!: () => void, reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // observed by its waiters; a timer-started sync may have none
  return { promise, resolve, reject };
}

export interface FlushListener {
  (flushedOffset: number): void;
}

export class GroupCommit {
  #flushedOffset: number;
  /** Waiters for the next sync to start: their bytes were written before they waited. */
  #next: Batch | undefined;
  /** The sync in flight and how far it reaches. */
  #current: { batch: Batch; upTo: number } | undefined;
  #failure: Error | undefined;
  #listener: FlushListener = () => {};
  #idle: (() => void)[] = [];
  #onFailed: () => void = () => {};

  /** How long each flush (the fdatasyncs of one group commit) took. */
  readonly flushTimes = new DurationHistogram(FLUSH_BOUNDS_MS);

  constructor(
    private readonly log: CommitLog,
    private readonly options: { syncFlushTimeoutMs: number },
  ) {
    this.#flushedOffset = log.wroteOffset;
  }

  get flushedOffset(): number {
    return this.#flushedOffset;
  }
  get failure(): Error | undefined {
    return this.#failure;
  }

  onFlushed(listener: FlushListener) {
    this.#listener = listener;
  }

  /** Called once when an fdatasync fails (the store then refuses writes for good). */
  onFailed(listener: () => void) {
    this.#onFailed = listener;
  }

  /** After recovery: everything below `offset` is on disk. */
  reset(offset: number) {
    this.#flushedOffset = offset;
  }

  /**
   * Resolves once everything below `offset` is durable; rejects if that cannot be promised.
   * The caller's bytes must already be written (it waits after its write).
   */
  waitFlushed(offset: number): Promise<void> {
    if (this.#failure) return Promise.reject(this.#notWritable());
    if (offset <= this.#flushedOffset) return Promise.resolve();
    if (this.#current && offset <= this.#current.upTo) return this.#current.batch.promise;
    this.#next ??= newBatch();
    const waiting = this.#next.promise;
    this.flush();
    return waiting;
  }

  /** Starts a sync of everything written so far, unless one is running (it will chain). */
  flush(): void {
    if (this.#current || this.#failure) return;
    if (this.log.wroteOffset <= this.#flushedOffset) {
      this.#notifyIdle();
      return;
    }
    const batch = this.#next ?? newBatch();
    this.#next = undefined;
    this.#current = { batch, upTo: this.log.wroteOffset };
    void this.#syncOnce(batch, this.#current.upTo);
  }

  /** Resolves when no sync is running and nothing written is unsynced (or flushing failed). */
  idle(): Promise<void> {
    if (!this.#current && (this.#failure || this.log.wroteOffset <= this.#flushedOffset)) {
      return Promise.resolve();
    }
    const done = new Promise<void>((resolve) => this.#idle.push(resolve));
    this.flush();
    return done;
  }

  async #syncOnce(batch: Batch, upTo: number) {
    const from = this.#flushedOffset;
    const started = performance.now();
    const timer = setTimeout(() => batch.reject(this.#timedOut()), this.options.syncFlushTimeoutMs);
    try {
      for (const segment of this.log.segmentsBetween(from, upTo)) {
        await segment.nameDurable;
        await segment.file.datasync();
      }
    } catch (err) {
      clearTimeout(timer);
      this.#fail(err as Error);
      return;
    }
    clearTimeout(timer);
    this.flushTimes.observe(performance.now() - started);
    this.#flushedOffset = upTo;
    this.#current = undefined;
    batch.resolve();
    this.#listener(upTo);
    // The next sync starts after this turn's writes: appenders just answered append again
    // at once, and their records should ride that sync rather than wait for the one after.
    if (this.#next || this.#idle.length > 0) setImmediate(() => this.flush());
  }

  /** A sync past syncFlushTimeout: its waiters get FLUSH_DISK_TIMEOUT (info: maybe stored). */
  #timedOut(): StoreError {
    return new StoreError(
      "FLUSH_DISK_TIMEOUT",
      `Cannot confirm durability as fdatasync took longer than syncFlushTimeout ${this.options.syncFlushTimeoutMs} ms`,
    );
  }

  #fail(cause: Error) {
    this.#failure = cause;
    const failed = [this.#current?.batch, this.#next];
    this.#current = undefined;
    this.#next = undefined;
    for (const batch of failed) batch?.reject(this.#notWritable());
    this.#notifyIdle();
    this.#onFailed();
  }

  #notWritable(): StoreError {
    return new StoreError(
      "STORE_NOT_WRITABLE",
      "Cannot accept writes as an fdatasync of the CommitLog failed; the store refuses rather than risk acknowledging lost data",
      { cause: this.#failure },
    );
  }

  #notifyIdle() {
    const idle = this.#idle;
    this.#idle = [];
    for (const f of idle) f();
  }
}
