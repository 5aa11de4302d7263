// Whether the store takes writes, and the one CommitLog write that the puts of an event-loop
// turn share. Writes are refused while the store is closed and while a replica truncation
// runs (planned states), and on three faults, each logged once at error level when it
// starts (with its cause), once at info when writes resume, and counted (`changes`):
//  - "failed", final: a failed fdatasync (GroupCommit: the kernel may have dropped the
//    data, so it is never retried), a CommitLog write that failed for another reason than
//    space, a failed dispatch or truncation. The restart's recovery sorts it out.
//  - "no-space", heals: a CommitLog write or a dispatch found the disk full (ENOSPC). That
//    write did not land, so nothing acknowledged is lost: what was gathered and not written
//    is dropped (its puts are refused), the part of the write that landed is cut off
//    (onNoSpace, no_space.ts), and writes resume once space is back (no_space.ts).
//  - "disk-full", heals: retention found disk use above diskSpaceWarningLevelRatio.
import { setImmediate } from "node:timers";
import { StoreError } from "./errors.ts";
import { isNoSpace } from "./file_port.ts";
import type { CommitLog } from "./commit_log/commit_log.ts";
import type { GroupCommit } from "./commit_log/group_commit.ts";
import type { StoreLog } from "./store_types.ts";

export type WriteFault = "failed" | "no-space" | "disk-full";

/** A disk-full stop: its cause, and the cut of what landed of the failed write, if any. */
export interface NoSpace {
  cause: Error;
  /** Resolves once the failed write's bytes are cut off durably (rejects: final failure). */
  cut: Promise<void>;
}

export interface WriteGateOptions {
  diskSpaceWarningLevelRatio: number;
  log: StoreLog;
  /** A write found the disk full: drop what was not written and cut off what landed. */
  onNoSpace: () => Promise<void>;
}

export class WriteGate {
  open = false;
  truncating = false;
  #diskFull = false;
  #noSpace: NoSpace | undefined;
  #failure: Error | undefined;
  #tick: Promise<void> | undefined;
  #dropEpoch = 0;
  #droppedFrom = 0;
  #fault: WriteFault | undefined;
  /** Times writability changed for a fault: each stop and each resume counts one. */
  changes = 0;

  constructor(
    private readonly commitLog: CommitLog,
    private readonly groupCommit: GroupCommit,
    private readonly options: WriteGateOptions,
  ) {
    groupCommit.onFailed(() => this.#update());
  }

  get writable(): boolean {
    return this.open && !this.groupCommit.failure && !this.#failure && !this.#diskFull &&
      !this.#noSpace && !this.truncating;
  }

  /** The fault writes are refused for, if any (closed and truncating are not faults). */
  get fault(): WriteFault | undefined {
    return this.failed
      ? "failed"
      : this.#noSpace
      ? "no-space"
      : this.#diskFull
      ? "disk-full"
      : undefined;
  }

  /** Set by retention: disk use is above diskSpaceWarningLevelRatio. */
  get diskFull(): boolean {
    return this.#diskFull;
  }
  set diskFull(full: boolean) {
    this.#diskFull = full;
    this.#update();
  }

  /** The disk-full stop writes are waiting out, if any. */
  get noSpace(): NoSpace | undefined {
    return this.#noSpace;
  }

  /** A CommitLog write or fdatasync, or a dispatch, failed for good: the tail is unknown. */
  get failed(): boolean {
    return this.groupCommit.failure !== undefined || this.#failure !== undefined;
  }

  /** The CommitLog write or dispatch that failed for good, if one did (fdatasync's is GroupCommit's). */
  get writeFailure(): Error | undefined {
    return this.#failure;
  }

  /** Puts gathered this turn wait for their write. */
  get writeScheduled(): boolean {
    return this.#tick !== undefined;
  }

  /** Refuse writes from now on, for good. */
  fail(err: Error): void {
    this.#failure ??= err;
    this.#update();
  }

  /** A dispatch found the disk full: refuse until it catches up (no_space.ts). */
  dispatchFoundNoSpace(err: Error): void {
    this.#noSpace ??= { cause: err, cut: Promise.resolve() };
    this.#update();
  }

  /** Space is back and the log takes writes again (no_space.ts checked). */
  resume(): void {
    this.#noSpace = undefined;
    this.#update();
  }

  /** Throws STORE_NOT_WRITABLE, saying why, unless the store takes writes. */
  check(): void {
    if (this.writable) return;
    const why = !this.open
      ? "the store is not open"
      : this.failed
      ? "a CommitLog write or fdatasync failed"
      : this.truncating
      ? "a CommitLog truncation is in progress"
      : this.#noSpace
      ? "the disk is full (no space left on device); writes resume once space is free"
      : `disk use passed diskSpaceWarningLevelRatio ${this.options.diskSpaceWarningLevelRatio}%`;
    throw new StoreError("STORE_NOT_WRITABLE", `Cannot accept writes as ${why}`, {
      cause: this.groupCommit.failure ?? this.#failure ?? this.#noSpace?.cause,
    });
  }

  /**
   * A CommitLog write failed: returns the STORE_NOT_WRITABLE to reject with. For want of
   * space, what was gathered and not written is dropped (checkWritten refuses those puts)
   * and writes resume once space is back; for any other cause, writes are refused for good.
   */
  writeFailed(err: unknown): StoreError {
    if (!isNoSpace(err) || this.failed) {
      this.fail(err as Error);
      return new StoreError(
        "STORE_NOT_WRITABLE",
        "Cannot accept writes as a CommitLog write failed",
        {
          cause: err,
        },
      );
    }
    const refused = this.#noSpaceError(err);
    // Records below the written end were written (an earlier write of this turn): their
    // puts still succeed. Those at and after it are dropped, and their puts refused.
    this.#droppedFrom = this.commitLog.wroteOffset;
    this.#dropEpoch++;
    const cut = this.options.onNoSpace();
    cut.catch(() => {}); // awaited by no_space.ts
    const before = this.#noSpace;
    this.#noSpace = before
      ? { cause: before.cause, cut: Promise.all([before.cut, cut]).then(() => {}) }
      : { cause: err as Error, cut };
    this.#update();
    return refused;
  }

  /** Changes with each drop of unwritten records; a put notes it when it appends. */
  get dropEpoch(): number {
    return this.#dropEpoch;
  }

  /**
   * Throws STORE_NOT_WRITABLE if the record a put appended at `offset` (when dropEpoch was
   * `epoch`) was dropped unwritten since (a write of its turn found the disk full).
   */
  checkWritten(epoch: number, offset: number): void {
    if (epoch !== this.#dropEpoch && offset >= this.#droppedFrom) {
      throw this.#noSpaceError(this.#noSpace?.cause);
    }
  }

  #noSpaceError(cause: unknown): StoreError {
    return new StoreError(
      "STORE_NOT_WRITABLE",
      "Cannot accept writes as the disk is full (no space left on device); nothing was stored and writes resume once space is free",
      { cause },
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
            const refused = this.writeFailed(err);
            // No space: each put of the turn learns from checkWritten whether its record landed.
            if (this.#noSpace && !this.failed) resolve();
            else reject(refused);
          }
        });
      });
    }
    return this.#tick;
  }

  /** Waits for a scheduled write to settle, then writes whatever is still gathered. */
  async drain(): Promise<void> {
    await this.#tick?.catch(() => {});
    try {
      this.commitLog.writePending();
    } catch (err) {
      this.writeFailed(err);
    }
    await this.#noSpace?.cut.catch(() => {});
  }

  /** Logs and counts a change of fault: at error level when one starts, info when it ends. */
  #update(): void {
    const fault = this.fault;
    if (fault === this.#fault) return;
    const was = this.#fault;
    this.#fault = fault;
    this.changes++;
    if (fault === undefined) {
      this.options.log("info", "store accepts writes again", { after: was });
      return;
    }
    const cause = this.groupCommit.failure ?? this.#failure ?? this.#noSpace?.cause;
    this.options.log("error", "store stopped accepting writes", {
      cause: fault,
      detail: fault === "failed"
        ? "final: a CommitLog write, fdatasync, dispatch or truncation failed; restart to recover"
        : fault === "no-space"
        ? "no space left on device; writes resume once space is free"
        : `disk use above diskSpaceWarningLevelRatio ${this.options.diskSpaceWarningLevelRatio}%`,
      err: cause ? String(cause) : undefined,
    });
  }
}
