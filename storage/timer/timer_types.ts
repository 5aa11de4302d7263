// What the timer store takes and returns (timer_store.ts), apart so that the slot code can
// share it without importing the store.

export interface TimerInput {
  deliverMs: number;
  commitLogOffset: number;
  msgSize: number;
}

export interface TimerEntry extends TimerInput {
  /** The caller's nowMs when the timer was added. */
  enqueueMs: number;
}

/** "already-fired": its slot had fired. readTime decides, not nowMs: a timer whose time has
 * come but whose slot advance() has not reached yet is still cancelled, and stays silent.
 * "not-found": no live timer with that offset (never added, lost in a crash, or cancelled
 * already). */
export type CancelStatus = "cancelled" | "already-fired" | "not-found";

/** Why advance() stopped: it reached nowMs, hit maxSlots or advanceEntriesMax, or needs a
 * checkpoint() first (readTime may run at most fineWindowMs past the last one). */
export type AdvanceStatus = "caught-up" | "slot-limit" | "entry-limit" | "checkpoint-needed";

export interface AdvanceResult {
  /** Due timers, not cancelled, in deliverMs order (add order among equals). */
  entries: TimerEntry[];
  readTimeMs: number;
  status: AdvanceStatus;
}
