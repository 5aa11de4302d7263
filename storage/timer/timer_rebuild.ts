// Rebuilding the wheels at open by replaying the timer log (timer_wheel.ts says why the
// log is the only durable state). The replay starts from the first segment left and
// restarts the wheels at the checkpoint's readTime: a fine record whose slot had fired by
// then, or a coarse one whose slot had been rolled, is skipped; every other record is
// linked into its slot as it was at runtime, which the replay checks (its prevPos must be
// the slot's newest record so far). A ROLL_DONE empties its coarse slot. Cost: one
// sequential read of the live segments (56 bytes a timer).
//
// The log ends at the first torn record, missing segment or failed check. Below the
// checkpoint's logFlushedPos that is damage (TIMER_LOG_CORRUPT); above it, the records
// were never durable and their timers come back from the caller, who re-feeds from the
// checkpoint's consumedQueueOffset. A roll cut by the crash (copies without ROLL_DONE) is
// the log's tail: it is cut off and the coarse slot, still whole, rolls again.
import { assert } from "../errors.ts";
import { TimerError } from "./timer_config.ts";
import type { TimerLog } from "./timer_log.ts";
import {
  isCoarse,
  MAGIC_DELETE,
  MAGIC_ROLL_DONE,
  MAGIC_ROLLED,
  type TimerRecord,
} from "./timer_record.ts";
import type { TimerWheels } from "./timer_wheel.ts";

export interface RebuildResult {
  /** Where the valid log ends: the caller cuts the log there. */
  endPos: number;
  /** Live timers in the wheels. */
  pending: number;
}

export function rebuildWheels(
  log: TimerLog,
  wheels: TimerWheels,
  logFlushedPos: number,
): RebuildResult {
  const first = replay(log, wheels, logFlushedPos);
  if (first.openRollStart < 0) return first;
  if (first.openRollStart < logFlushedPos) corrupt(first.openRollStart, logFlushedPos);
  log.setEnd(first.openRollStart);
  wheels.fine.reset();
  wheels.coarse.reset();
  const second = replay(log, wheels, logFlushedPos);
  assert(second.openRollStart < 0, "timer log still ends inside a roll");
  return second;
}

function replay(log: TimerLog, wheels: TimerWheels, logFlushedPos: number) {
  const { readSlot, rollCursor } = wheels;
  const coarseSlotLimit = wheels.coarseSlotLimit;
  let pending = 0;
  let openRollStart = -1;
  const visit = (pos: number, r: TimerRecord): boolean => {
    if (r.magic === MAGIC_ROLL_DONE) {
      openRollStart = -1;
      const slot = r.slotMs / wheels.coarse.precisionMs;
      if (!Number.isInteger(slot)) return false;
      if (slot >= rollCursor && slot < coarseSlotLimit) pending -= wheels.coarse.clear(slot);
      return true;
    }
    if ((r.magic & MAGIC_ROLLED) !== 0) {
      if (openRollStart < 0) openRollStart = pos;
    } else if (openRollStart >= 0) {
      return false; // a roll's copies are contiguous and end with ROLL_DONE
    }
    const coarse = isCoarse(r.magic);
    const wheel = coarse ? wheels.coarse : wheels.fine;
    const slot = r.slotMs / wheel.precisionMs;
    if (!Number.isInteger(slot)) return false;
    if (coarse ? slot < rollCursor : slot <= readSlot) return true; // retired
    if (coarse && slot >= coarseSlotLimit) {
      throw new TimerError(
        "TIMER_CONFIG_CHANGED",
        `Cannot rebuild the timer wheel as a timer at ${r.deliverMs} lies beyond the coarse wheel: was horizonMs reduced?`,
      );
    }
    if (!coarse && slot > wheels.fineSlotLimit) return false;
    if (r.prevPos !== wheel.lastPos(slot)) return false;
    const delta = (r.magic & MAGIC_DELETE) !== 0 ? -1 : 1;
    if (wheel.live(slot) + delta < 0) return false;
    wheel.link(slot, pos, delta);
    if (!coarse && slot > Math.ceil(r.deliverMs / wheel.precisionMs)) {
      wheels.shiftedSlotMax = Math.max(wheels.shiftedSlotMax, slot);
    }
    pending += delta;
    return true;
  };
  // A roll open where segments were deleted ended in them: the log is cut only after the
  // checkpoint's segment, and deletions stop before it.
  const onGap = () => openRollStart = -1;
  const endPos = log.scan(log.segmentStartOf(logFlushedPos), visit, onGap);
  if (endPos < logFlushedPos) corrupt(endPos, logFlushedPos);
  return { endPos, pending, openRollStart };
}

function corrupt(pos: number, logFlushedPos: number): never {
  throw new TimerError(
    "TIMER_LOG_CORRUPT",
    `Cannot open the timer store as its log ends at ${pos}, below ${logFlushedPos} that the last checkpoint made durable`,
  );
}
