// Whether the store takes writes, and the one CommitLog write that the puts of an event-loop
// turn share. A failed CommitLog write, fdatasync or dispatch leaves the tail or derived state
// unknown: from then on writes are refused and the restart's recovery sorts it out. Writes
// are refused too while the store is closed, while a replica truncation runs and while the
// disk is nearly full.
import { setImmediate } from "node:timers";
import { StoreError } from "./errors.ts";
import type { CommitLog } from "./commit_log/commit_log.ts";
import type { GroupCommit } from "./commit_log/group_commit.ts";

export class WriteGate {
  open = false;
  truncating = false;
  /** Set by retention when disk use passes diskSpaceWarningLevelRatio. */
  diskFull = false;
  #failure: Error | undefined;
  #tick: Promise<void> | undefined;

  constructor(
    private readonly commitLog: CommitLog,
    private readonly groupCommit: GroupCommit,
    private readonly diskSpaceWarningLevelRatio: number,
  ) {}

  get writable(): boolean {
    return this.open && !this.groupCommit.failure && !this.#failure && !this.diskFull &&
      !this.truncating;
  }

  /** A CommitLog write or fdatasync, or a dispatch, failed: the tail is unknown. */
  get failed(): boolean {
    return this.groupCommit.failure !== undefined || this.#failure !== undefined;
  }

  /** The CommitLog write or dispatch that failed, if one did (fdatasync's is GroupCommit's). */
  get writeFailure(): Error | undefined {
    return this.#failure;
  }

  /** Puts gathered this turn wait for their write. */
  get writeScheduled(): boolean {
    return this.#tick !== undefined;
  }

  fail(err: Error): void {
    this.#failure = err;
  }

  /** Throws STORE_NOT_WRITABLE, saying why, unless the store takes writes. */
  check(): void {
    if (this.writable) return;
    const why = !this.open
      ? "the store is not open"
      : this.truncating
      ? "a CommitLog truncation is in progress"
      : this.diskFull
      ? `disk use passed diskSpaceWarningLevelRatio ${this.diskSpaceWarningLevelRatio}%`
      : "a CommitLog write or fdatasync failed";
    throw new StoreError("STORE_NOT_WRITABLE", `Cannot accept writes as ${why}`, {
      cause: this.groupCommit.failure ?? this.#failure,
    });
  }

  /** A CommitLog write failed: refuse from now on, and reject with STORE_NOT_WRITABLE. */
  writeFailed(err: unknown): StoreError {
    this.#failure = err as Error;
    return new StoreError(
      "STORE_NOT_WRITABLE",
      "Cannot accept writes as a CommitLog write failed",
      { cause: err },
    );
  }

  /**
   * One write for all appends made before the event loop next checks for I/O: under load
   * many requests are parsed in one loop turn, and they share one writeSync (a syscall
   * through Deno's node:fs costs far more than copying a record).
   */
  scheduleWrite(): Promise<void> {
    if (!this.#tick) {
      this.#tick = new Promise<void>((resolve, reject) => {
        setImmediate(() => {
          this.#tick = undefined;
          try {
            this.commitLog.writePending();
            resolve();
          } catch (err) {
            reject(this.writeFailed(err));
          }
        });
      });
    }
    return this.#tick;
  }

  /** Waits for a scheduled write to settle, then writes whatever is still gathered. */
  async drain(): Promise<void> {
    await this.#tick?.catch(() => {});
    this.commitLog.writePending();
  }
}
