// The durable timer store (RocketMQ TimerMessageStore, reference/rocketmq.md §8; DESIGN.md
// "Time"). Pure storage: time comes in as arguments, and an entry carries only the
// CommitLog offset and size of the message the caller re-puts when it fires.
//
// Durability. add() and cancel() are durable once a later flush() or checkpoint() has
// resolved. checkpoint() saves readTime and the caller's consumedQueueOffset after the log
// is flushed; open() restarts the wheels at that readTime, so a timer handed out after the
// last checkpoint is handed out again (at-least-once), one handed out before it never is,
// and none is handed out early. Timers added after the last checkpoint may be lost with the
// log's tail: the caller re-feeds its timer queue from consumedQueueOffset (its source of
// truth is the CommitLog timer topic) and re-issues cancels made since that checkpoint.
import type { FilePort } from "../file_port.ts";
import { joinPath } from "../file_port.ts";
import { StoreError } from "../errors.ts";
import {
  checkTimerConfig,
  defaultTimerStoreConfig,
  TimerError,
  type TimerStoreConfig,
  wheelGeometry,
} from "./timer_config.ts";
import { readTimerCheckpoint, writeTimerCheckpoint } from "./timer_checkpoint.ts";
import { TimerLog } from "./timer_log.ts";
import { rebuildWheels } from "./timer_rebuild.ts";
import { SlotWalker } from "./timer_slots.ts";
import { emptyRecord, MAGIC_DEFAULT, MAGIC_ROLL } from "./timer_record.ts";
import { TimerWheels, type WheelSlots } from "./timer_wheel.ts";
import type {
  AdvanceResult,
  AdvanceStatus,
  CancelStatus,
  TimerEntry,
  TimerInput,
} from "./timer_types.ts";

export type * from "./timer_types.ts";

export interface TimerStoreOptions {
  files: FilePort;
  /** Folder of this store: timerlog/ (segments) and timercheck. */
  dir: string;
  /** The caller's time: where a new store starts its readTime. */
  nowMs: number;
  config?: Partial<TimerStoreConfig>;
}

const CHECKPOINT_NAME = "timercheck";
const LOG_DIR_NAME = "timerlog";

export class TimerStore {
  readonly config: TimerStoreConfig;
  readonly #files: FilePort;
  readonly #checkpointPath: string;
  readonly #log: TimerLog;
  readonly #wheels: TimerWheels;
  readonly #slots: SlotWalker;
  #pending: number;
  #consumedQueueOffset: number;
  #checkpointFlushedPos: number;
  #flushing: Promise<unknown> = Promise.resolve();
  #checkpointing: Promise<unknown> = Promise.resolve();
  #broken: unknown = undefined;
  #record = emptyRecord();

  private constructor(
    options: TimerStoreOptions,
    config: TimerStoreConfig,
    parts: { log: TimerLog; wheels: TimerWheels; pending: number },
    saved: { consumedQueueOffset: number; logFlushedPos: number },
  ) {
    this.config = config;
    this.#files = options.files;
    this.#checkpointPath = joinPath(options.dir, CHECKPOINT_NAME);
    this.#log = parts.log;
    this.#wheels = parts.wheels;
    this.#slots = new SlotWalker(parts.log, parts.wheels);
    this.#pending = parts.pending;
    this.#consumedQueueOffset = saved.consumedQueueOffset;
    this.#checkpointFlushedPos = saved.logFlushedPos;
  }

  /** Loads the checkpoint and rebuilds the wheels from the timer log (timer_rebuild.ts).
   * Without a checkpoint the log is discarded: nothing in it was covered by one, and the
   * caller re-feeds from consumedQueueOffset 0. */
  static async open(options: TimerStoreOptions): Promise<TimerStore> {
    const config = { ...defaultTimerStoreConfig(), ...options.config };
    checkTimerConfig(config);
    checkTime(options.nowMs, "nowMs");
    const geometry = wheelGeometry(config);
    const { files, dir } = options;
    files.mkdirp(dir);
    const logDir = joinPath(dir, LOG_DIR_NAME);
    const saved = readTimerCheckpoint(files, joinPath(dir, CHECKPOINT_NAME), geometry);
    if (!saved) files.removeTree(logDir);
    const p = config.precisionMs;
    const readTimeMs = saved?.readTimeMs ?? Math.floor(options.nowMs / p) * p;
    const wheels = new TimerWheels(geometry, readTimeMs);
    const log = new TimerLog({
      files,
      dir: logDir,
      segmentBytes: config.logSegmentBytes,
      retireMs: (record) => wheels.retireMs(record),
    });
    log.load();
    const logFlushedPos = saved?.logFlushedPos ?? 0;
    try {
      const { endPos, pending } = rebuildWheels(log, wheels, logFlushedPos);
      log.setEnd(endPos);
      await log.flush(); // the cut tail and removed segments, for good
      const consumedQueueOffset = saved?.consumedQueueOffset ?? 0;
      return new TimerStore(options, config, { log, wheels, pending }, {
        consumedQueueOffset,
        logFlushedPos,
      });
    } catch (err) {
      log.close();
      throw err;
    }
  }

  /** Every timer of a slot at or before it has been handed out by advance(). */
  get readTimeMs(): number {
    return this.#wheels.readTimeMs;
  }
  /** From the last checkpoint: the caller feeds its timer queue from here after open(). */
  get consumedQueueOffset(): number {
    return this.#consumedQueueOffset;
  }
  /** Timers added and neither fired nor cancelled. Exact, except that a timer added twice
   * (re-fed after a crash) counts twice until it fires once. */
  get pendingCount(): number {
    return this.#pending;
  }
  /** Bytes held in memory: the slot arrays, buffers and per-segment bookkeeping. */
  memoryBytes(): number {
    return this.#wheels.memoryBytes() + this.#log.memoryBytes();
  }

  /**
   * Adds a timer: to its fine slot if due within fineWindowMs of readTime, else to its
   * coarse slot. One already due fires at the next advance() (delivering at once is the
   * caller's job; this is the fallback). Throws TIMER_BEYOND_HORIZON past nowMs + horizonMs.
   */
  add(input: TimerInput, nowMs: number): void {
    this.#checkWritable();
    checkTime(input.deliverMs, "deliverMs");
    checkTime(input.commitLogOffset, "commitLogOffset");
    checkTime(nowMs, "nowMs");
    if (!(Number.isInteger(input.msgSize) && input.msgSize >= 0 && input.msgSize <= 0x7fffffff)) {
      throw new TimerError(
        "TIMER_ILLEGAL",
        `Cannot add timer as msgSize ${input.msgSize} is not an int`,
      );
    }
    if (input.deliverMs - nowMs > this.config.horizonMs) {
      throw new TimerError(
        "TIMER_BEYOND_HORIZON",
        `Cannot add timer as its delay exceeds horizonMs: ${
          input.deliverMs - nowMs
        } > ${this.config.horizonMs}`,
      );
    }
    const place = this.#wheels.place(input.deliverMs);
    if (place === undefined) {
      throw new TimerError(
        "TIMER_WHEEL_BEHIND",
        `Cannot add timer at ${input.deliverMs} yet as readTime ${this.readTimeMs} or the last checkpoint lags: retry after advance() and checkpoint()`,
      );
    }
    const wheel = place.coarse ? this.#wheels.coarse : this.#wheels.fine;
    const r = this.#record;
    r.prevPos = wheel.lastPos(place.slot);
    r.magic = place.coarse ? MAGIC_ROLL : MAGIC_DEFAULT;
    r.deliverMs = input.deliverMs;
    r.commitLogOffset = input.commitLogOffset;
    r.msgSize = input.msgSize;
    r.enqueueMs = nowMs;
    r.slotMs = place.slot * wheel.precisionMs;
    wheel.link(place.slot, this.#log.append(r), 1);
    this.#pending++;
  }

  /**
   * Appends a DELETE marker into the slot holding the timer, so it is skipped when the slot
   * fires or rolls. Reads the slot's chain to answer (cost: the records of that slot), and
   * for a timer already due, the chains of the slots a timer added late may sit in.
   */
  cancel(commitLogOffset: number, deliverMs: number, nowMs: number): CancelStatus {
    this.#checkWritable();
    checkTime(commitLogOffset, "commitLogOffset");
    checkTime(deliverMs, "deliverMs");
    checkTime(nowMs, "nowMs");
    const wheels = this.#wheels;
    const { fine, coarse } = wheels;
    const slot = Math.ceil(deliverMs / this.config.precisionMs);
    const cancelIn = (wheel: WheelSlots, s: number) => {
      if (!this.#slots.cancel(wheel, s, commitLogOffset, deliverMs, nowMs)) return false;
      this.#pending--;
      return true;
    };
    let found = slot > wheels.readSlot && slot <= wheels.fineSlotLimit && cancelIn(fine, slot);
    const coarseSlot = Math.ceil(deliverMs / this.config.coarsePrecisionMs);
    if (coarseSlot >= wheels.rollCursor && coarseSlot < wheels.coarseSlotLimit) {
      found = cancelIn(coarse, coarseSlot) || found;
    }
    const shiftedTo = Math.min(wheels.shiftedSlotMax, wheels.fineSlotLimit);
    for (let s = Math.max(slot, wheels.readSlot) + 1; s <= shiftedTo; s++) {
      if (fine.live(s) > 0) found = cancelIn(fine, s) || found;
    }
    if (found) return "cancelled";
    return slot <= wheels.readSlot ? "already-fired" : "not-found";
  }

  /**
   * Moves readTime forward slot by slot, up to nowMs and at most `maxSlots` slots, and
   * returns the timers of the fired fine slots. Coarse slots coming within the fine window
   * are rolled on the way (their timers copied into fine slots, once each).
   */
  advance(nowMs: number, maxSlots = this.config.advanceSlotsMax): AdvanceResult {
    this.#checkWritable();
    checkTime(nowMs, "nowMs");
    const wheels = this.#wheels;
    const targetSlot = Math.floor(nowMs / this.config.precisionMs);
    const lastSlot = Math.min(targetSlot, wheels.readSlot + maxSlots, wheels.readSlotLimit);
    const entries: TimerEntry[] = [];
    while (wheels.readSlot < lastSlot && entries.length < this.config.advanceEntriesMax) {
      const slot = wheels.readSlot + 1;
      this.#pending -= this.#slots.fire(slot, entries);
      wheels.readSlot = slot;
      const rollTo = wheels.rollCursorAt(wheels.readTimeMs);
      while (wheels.rollCursor < rollTo) this.#pending += this.#slots.roll(wheels.rollCursor++);
    }
    let status: AdvanceStatus = "slot-limit";
    if (wheels.readSlot >= targetSlot) status = "caught-up";
    else if (entries.length >= this.config.advanceEntriesMax) status = "entry-limit";
    else if (wheels.readSlot >= wheels.readSlotLimit) status = "checkpoint-needed";
    return { entries, readTimeMs: this.readTimeMs, status };
  }

  /** Makes every add, cancel and roll so far durable (write, fdatasync, fsync of the folder
   * for new segments); resolves with the durable end of the log. A failed fdatasync leaves
   * the store refusing writes. */
  async flush(): Promise<number> {
    this.#checkWritable();
    const run = this.#flushing.then(() => this.#log.flush());
    this.#flushing = run.catch(() => {});
    try {
      return await run;
    } catch (err) {
      this.#fail(err);
    }
  }

  /** Flushes the log, then saves readTime and `consumedQueueOffset` (the caller's timer-queue
   * offset below which every timer has been added) atomically. Call it at least once per
   * fineWindowMs of readTime progress, or advance() stops with "checkpoint-needed". */
  async checkpoint(consumedQueueOffset: number): Promise<void> {
    this.#checkWritable();
    checkTime(consumedQueueOffset, "consumedQueueOffset");
    // Taken before anything is awaited: the flush below then covers every roll up to it.
    const readTimeMs = this.readTimeMs;
    const flushed = this.flush();
    flushed.catch(() => {}); // awaited below, maybe after it failed
    const run = this.#checkpointing.then(async () => {
      const logFlushedPos = await flushed;
      const state = { readTimeMs, consumedQueueOffset, logFlushedPos };
      await writeTimerCheckpoint(this.#files, this.#checkpointPath, state, this.#wheels.geometry);
      const slot = readTimeMs / this.config.precisionMs;
      this.#wheels.checkpointReadSlot = Math.max(this.#wheels.checkpointReadSlot, slot);
      this.#checkpointFlushedPos = Math.max(this.#checkpointFlushedPos, logFlushedPos);
      this.#consumedQueueOffset = consumedQueueOffset;
    });
    this.#checkpointing = run.catch(() => {});
    try {
      await run;
    } catch (err) {
      this.#fail(err);
    }
  }

  /** Removes timer-log segments no longer needed by the wheels or by a recovery from the
   * last checkpoint; never the segment being appended to. Returns how many. */
  deleteRetiredSegments(): number {
    const readTimeMs = this.#wheels.checkpointReadSlot * this.config.precisionMs;
    const below = this.#log.segmentStartOf(this.#checkpointFlushedPos);
    return this.#log.deleteSegmentsRetiredBy(readTimeMs, below);
  }

  /** Releases the files. Not a flush: call checkpoint() first to keep recent work. */
  async close(): Promise<void> {
    await this.#checkpointing;
    await this.#flushing;
    if (this.#broken === undefined) this.#log.writePending();
    this.#log.close();
  }

  #checkWritable(): void {
    if (this.#broken === undefined) return;
    throw new StoreError(
      "STORE_NOT_WRITABLE",
      "Cannot change the timer store as an earlier flush failed",
      { cause: this.#broken },
    );
  }

  #fail(err: unknown): never {
    this.#broken ??= err ?? new Error("Timer store flush failed without a cause");
    throw err;
  }
}

function checkTime(value: number, name: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TimerError(
      "TIMER_ILLEGAL",
      `Cannot use ${name} ${value}: not a non-negative integer`,
    );
  }
}
