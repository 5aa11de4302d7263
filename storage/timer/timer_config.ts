// Settings and typed errors of the timer store (DESIGN.md "Time"; reference/rocketmq.md §8).
// RocketMQ keeps one wheel of 1 s slots over 7 days and refuses delays past 3 days; we keep
// two wheels so that a 10 ms precision and a one-year horizon cost about 24 MB of slots:
// a FINE wheel over the next `fineWindowMs` and a COARSE wheel beyond it, whose slots are
// copied (rolled) into fine slots as they come within the window.

export interface TimerStoreConfig {
  /** Width of a fine slot in ms (timerPrecisionMs; RocketMQ 1000). 10: a timer fires at
   * most 10 ms after its time, plus the caller's advance() period. */
  precisionMs: number;
  /** Span of the fine wheel in ms (timerRollWindowSlot). 2 h = 720,000 slots. Timers due
   * sooner go straight to a fine slot; later ones wait in a coarse slot. */
  fineWindowMs: number;
  /** Width of a coarse slot in ms. 60,000: a far timer is rolled into its fine slot between
   * fineWindowMs - 60 s and fineWindowMs before it is due. */
  coarsePrecisionMs: number;
  /** Latest accepted delivery, ms after the caller's now (timerMaxDelaySec; RocketMQ 3 days).
   * 365 days = 525,600 coarse slots. */
  horizonMs: number;
  /** Timer-log segment size in bytes (RocketMQ 100 MiB). 64 MiB = 1,198,372 records. */
  logSegmentBytes: number;
  /** Fine slots one advance() fires at most, so a long catch-up shares the event loop.
   * 100,000 (1,000 s of 10 ms slots; empty slots cost a few ns each). */
  advanceSlotsMax: number;
  /** advance() stops after the slot that takes its result to this many entries. 10,000.
   * A slot is never split, so one crowded slot can exceed it. */
  advanceEntriesMax: number;
}

export const MIB = 1024 * 1024;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

export function defaultTimerStoreConfig(): TimerStoreConfig {
  return {
    precisionMs: 10,
    fineWindowMs: 2 * HOUR_MS,
    coarsePrecisionMs: 60_000,
    horizonMs: 365 * DAY_MS,
    logSegmentBytes: 64 * MIB,
    advanceSlotsMax: 100_000,
    advanceEntriesMax: 10_000,
  };
}

export type TimerErrorCode =
  | "TIMER_ILLEGAL" // a negative or fractional time, offset or size
  | "TIMER_BEYOND_HORIZON" // deliverMs - nowMs > horizonMs (RocketMQ WHEEL_TIMER_MSG_ILLEGAL)
  | "TIMER_WHEEL_BEHIND" // readTime or the checkpoint lags so far that a far slot is still taken: retry later
  | "TIMER_CONFIG_ILLEGAL"
  | "TIMER_CONFIG_CHANGED" // the wheel geometry differs from the one the timer log was written with
  | "TIMER_CHECKPOINT_CORRUPT"
  | "TIMER_LOG_CORRUPT"; // damage below the position the last checkpoint made durable

/** StoreErrorCode (storage/errors.ts) has no timer codes; these are the timer store's own. */
export class TimerError extends Error {
  constructor(readonly code: TimerErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TimerError";
  }
}

/** Slot counts derived from the settings; the fine wheel holds two windows (see below). */
export interface WheelGeometry {
  precisionMs: number;
  coarsePrecisionMs: number;
  fineWindowMs: number;
  /** Fine slots in one window. */
  windowSlots: number;
  /** How far (in fine slots) readTime may run ahead of the last checkpoint's readTime. After
   * a crash the wheel restarts from the checkpoint while the log also holds timers placed
   * up to a window past the crash, so the fine wheel needs window + lag slots to keep them
   * apart: RocketMQ's wheel file likewise holds 2 x slotsTotal slots. */
  lagSlots: number;
  fineSlots: number;
  /** Coarse slots: the horizon plus two windows of slack for a lagging readTime/checkpoint. */
  coarseSlots: number;
}

export function wheelGeometry(config: TimerStoreConfig): WheelGeometry {
  const windowSlots = config.fineWindowMs / config.precisionMs;
  return {
    precisionMs: config.precisionMs,
    coarsePrecisionMs: config.coarsePrecisionMs,
    fineWindowMs: config.fineWindowMs,
    windowSlots,
    lagSlots: windowSlots,
    fineSlots: 2 * windowSlots,
    coarseSlots:
      Math.ceil((config.horizonMs + 2 * config.fineWindowMs) / config.coarsePrecisionMs) +
      2,
  };
}

/** Refuses settings the wheel arithmetic cannot serve. */
export function checkTimerConfig(config: TimerStoreConfig): void {
  const { precisionMs, fineWindowMs, coarsePrecisionMs, horizonMs } = config;
  const positive = [
    precisionMs,
    fineWindowMs,
    coarsePrecisionMs,
    horizonMs,
    config.logSegmentBytes,
    config.advanceSlotsMax,
    config.advanceEntriesMax,
  ];
  if (!positive.every((n) => Number.isSafeInteger(n) && n > 0)) {
    illegal(`Cannot use timer settings as one is not a positive integer: ${positive.join(", ")}`);
  }
  if (fineWindowMs % precisionMs !== 0 || coarsePrecisionMs % precisionMs !== 0) {
    illegal(
      `Cannot use timer settings as fineWindowMs ${fineWindowMs} and coarsePrecisionMs ${coarsePrecisionMs} must be multiples of precisionMs ${precisionMs}`,
    );
  }
  // A coarse slot is rolled while at least one more coarse slot of the window lies between
  // it and readTime, so its copies always land in fine slots still ahead of readTime.
  if (fineWindowMs < 2 * coarsePrecisionMs) {
    illegal(
      `Cannot use timer settings as fineWindowMs ${fineWindowMs} is below 2 x coarsePrecisionMs ${coarsePrecisionMs}`,
    );
  }
  const geometry = wheelGeometry(config);
  if (geometry.fineSlots > 1 << 26 || geometry.coarseSlots > 1 << 26) {
    illegal(
      `Cannot use timer settings as the wheels would hold ${geometry.fineSlots} fine and ${geometry.coarseSlots} coarse slots, above ${
        1 << 26
      }`,
    );
  }
}

function illegal(message: string): never {
  throw new TimerError("TIMER_CONFIG_ILLEGAL", message);
}
