// Pre-writing the next CommitLog segment with real zeros, in the background, as RocketMQ's
// AllocateMappedFileService does: fdatasync on pre-written blocks skips ext4 metadata
// commits (1.3-1.6x faster, p99 3x lower; reference/performance.md).
//
// The zeros go to `<name>.prealloc`, written off the event loop in paced chunks, synced,
// and only then renamed to the segment's name. Data is never written to a file that a
// zero chunk could still land on: if the segment is needed before it is ready, the
// preparation is abandoned (its file removed) and the segment is created sparse instead.
//
// It never takes the space live writes need: it starts only when the disk has room for the
// whole segment plus the reserve (RoomRule) and waits, checking every retryMs, until it has;
// it gives up when the room runs short while it fills; and a live write that finds the disk
// full releases it first (release(): the file is cut to nothing, then removed) and tries again.
import type { FileHandle, FilePort } from "../file_port.ts";
import { joinPath } from "../file_port.ts";
import { Segment, segmentName } from "./segment.ts";

export const PREALLOC_SUFFIX = ".prealloc";
const CHUNK_BYTES = 1024 * 1024;
/** Pause between chunks: caps the fill near 100 MB/s (a 1 GiB segment in ~11 s) so it never
 * crowds out appends; Deno runs part of each async write on the main thread. Appends that
 * outrun it simply get a sparse segment. */
const PAUSE_MS = 10;
// The fill costs the foreground while it runs, so by default it runs under SYNC_FLUSH only,
// where it pays (zeroFillSegments). bench/http/produce_bench.ts (ASYNC_FLUSH, quiet 2-core
// machine) with and without it: single produces Bun ~37k vs ~52k/s, Deno ~26k vs ~33k/s;
// on Bun every other produce took ~2 ms while the third segment filled.
// TODO: under SYNC_FLUSH, pace by append progress or idleness. 128 KiB chunks every 1 ms
// helped Bun (wake p99 3.5 -> 2.2 ms) but hurt Deno (1.5 -> 3.5 ms); batch fell 15-18%.

/** When the disk has room for a preparation: free bytes of `dir` beyond `bytes`. */
export interface RoomRule {
  /** Bytes that must stay free after the segment is filled, given the disk's size. */
  reserveBytes(totalBytes: number): number;
  /** ms between checks while the room is short. */
  retryMs: number;
}

export class SegmentPreparation {
  #cancelled = false;
  #ready: Segment | undefined;
  #file: FileHandle | undefined;
  #wake: (() => void) | undefined;
  readonly done: Promise<void>;

  constructor(
    private readonly files: FilePort,
    private readonly dir: string,
    readonly startOffset: number,
    private readonly sizeBytes: number,
    private readonly room?: RoomRule,
  ) {
    this.done = this.#run().catch(() => this.#discard());
  }

  /** Whether `bytes` more can be written leaving the reserve free (true when unknown). */
  hasRoom(bytes: number): boolean {
    const space = this.room && this.files.diskSpace?.(this.dir);
    if (!space || !this.room) return true;
    return space.freeBytes - bytes >= this.room.reserveBytes(space.totalBytes);
  }

  /**
   * A live write found the disk full: stop, and give the space back now (the file is cut to
   * nothing at once, even while a chunk is in flight; its name goes too).
   */
  release(): void {
    this.cancel();
    try {
      this.#file?.truncate(0);
    } catch { /* closed meanwhile: #discard removes it */ }
    const ready = this.#ready;
    this.#discard();
    if (ready && this.files.exists(ready.file.path)) this.files.remove(ready.file.path);
  }

  /** The finished segment, or undefined while zeros are still being written. */
  take(): Segment | undefined {
    const s = this.#ready;
    this.#ready = undefined;
    if (!s) this.cancel();
    return s;
  }

  cancel(): void {
    this.#cancelled = true;
    this.#wake?.();
  }

  async #run() {
    while (!this.hasRoom(this.sizeBytes)) {
      await this.#sleep(this.room!.retryMs);
      if (this.#cancelled) return;
    }
    const tmp = joinPath(this.dir, segmentName(this.startOffset) + PREALLOC_SUFFIX);
    const file = this.#file = this.files.open(tmp, { create: true });
    try {
      file.truncate(this.sizeBytes);
      const zeros = new Uint8Array(Math.min(CHUNK_BYTES, this.sizeBytes));
      for (let at = 0; at < this.sizeBytes; at += zeros.length) {
        await this.#sleep(PAUSE_MS);
        // Others may have taken the room meanwhile: the rest of the fill must still fit.
        if (!this.hasRoom(this.sizeBytes - at)) this.#cancelled = true;
        if (this.#cancelled) break;
        await file.writeAtAsync(zeros.subarray(0, Math.min(zeros.length, this.sizeBytes - at)), at);
      }
      if (!this.#cancelled) await file.datasync();
    } finally {
      this.#file = undefined;
      file.close();
    }
    // Checked and renamed in one synchronous step: no append can slip in between.
    if (this.#cancelled) return this.#discard();
    const path = joinPath(this.dir, segmentName(this.startOffset));
    this.files.rename(tmp, path);
    const segment = new Segment(this.startOffset, this.sizeBytes, this.files.open(path));
    segment.nameDurable = this.files.syncDir(this.dir);
    segment.nameDurable.catch(() => {});
    this.#ready = segment;
  }

  /** Waits `ms`, or less when cancelled. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve();
      }, ms);
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
    });
  }

  #discard() {
    const tmp = joinPath(this.dir, segmentName(this.startOffset) + PREALLOC_SUFFIX);
    if (this.files.exists(tmp)) this.files.remove(tmp);
    this.#ready?.close();
    this.#ready = undefined;
  }
}
