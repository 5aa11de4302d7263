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
import { setImmediate } from "node:timers";
import { StoreError } from "../errors.ts";
import type { CommitLog } from "./commit_log.ts";

interface Waiter {
  offset: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface FlushListener {
  (flushedOffset: number): void;
}

export class GroupCommit {
  #flushedOffset: number;
  #waiters: Waiter[] = [];
  #inFlight = false;
  #failure: Error | undefined;
  #listener: FlushListener = () => {};
  #idle: (() => void)[] = [];

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

  /** After recovery: everything below `offset` is on disk. */
  reset(offset: number) {
    this.#flushedOffset = offset;
  }

  /** Resolves once everything below `offset` is durable; rejects if that cannot be promised. */
  waitFlushed(offset: number): Promise<void> {
    if (this.#failure) return Promise.reject(this.#notWritable());
    if (offset <= this.#flushedOffset) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waiters.push({ offset, resolve, reject });
      this.flush();
    });
  }

  /** Starts a sync of everything written so far, unless one is running (it will chain). */
  flush(): void {
    if (this.#inFlight || this.#failure) return;
    if (this.log.wroteOffset <= this.#flushedOffset) {
      this.#notifyIdle();
      return;
    }
    this.#inFlight = true;
    void this.#syncOnce();
  }

  /** Resolves when no sync is running and nothing written is unsynced (or flushing failed). */
  idle(): Promise<void> {
    if (!this.#inFlight && (this.#failure || this.log.wroteOffset <= this.#flushedOffset)) {
      return Promise.resolve();
    }
    const done = new Promise<void>((resolve) => this.#idle.push(resolve));
    this.flush();
    return done;
  }

  async #syncOnce() {
    const from = this.#flushedOffset;
    const upTo = this.log.wroteOffset;
    const timer = setTimeout(() => this.#timeOutWaiters(upTo), this.options.syncFlushTimeoutMs);
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
    this.#flushedOffset = upTo;
    this.#inFlight = false;
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const w of waiting) {
      if (w.offset <= upTo) w.resolve();
      else this.#waiters.push(w);
    }
    this.#listener(upTo);
    // The next sync starts after this turn's writes: appenders just answered append again
    // at once, and their records should ride this sync rather than wait for the one after.
    if (this.#waiters.length > 0 || this.#idle.length > 0) setImmediate(() => this.flush());
  }

  /** A sync past syncFlushTimeout: its waiters get FLUSH_DISK_TIMEOUT (info: maybe stored). */
  #timeOutWaiters(upTo: number) {
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const w of waiting) {
      if (w.offset > upTo) {
        this.#waiters.push(w);
        continue;
      }
      w.reject(
        new StoreError(
          "FLUSH_DISK_TIMEOUT",
          `Cannot confirm durability as fdatasync took longer than syncFlushTimeout ${this.options.syncFlushTimeoutMs} ms`,
        ),
      );
    }
  }

  #fail(cause: Error) {
    this.#failure = cause;
    this.#inFlight = false;
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const w of waiting) w.reject(this.#notWritable());
    this.#notifyIdle();
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
