// Work on one slot's chain: fire a fine slot, roll a coarse one, cancel a timer.
// A chain is read newest first through prevPos; a DELETE cancels the timers of its
// commitLogOffset that precede it in the chain (a timer re-fed after the cancel lives).
import { assert } from "../errors.ts";
import type { TimerLog } from "./timer_log.ts";
import {
  emptyRecord,
  isCoarse,
  MAGIC_DEFAULT,
  MAGIC_DELETE,
  MAGIC_ROLL,
  MAGIC_ROLL_DONE,
  MAGIC_ROLLED,
  type TimerRecord,
} from "./timer_record.ts";
import type { TimerWheels, WheelSlots } from "./timer_wheel.ts";
import type { TimerEntry } from "./timer_types.ts";

export class SlotWalker {
  #record = emptyRecord();
  #copy = emptyRecord();

  constructor(private readonly log: TimerLog, private readonly wheels: TimerWheels) {}

  /** Appends the live timers of fine slot `slot` to `out` in deliverMs order (log order
   * among equals; a commitLogOffset twice in the slot, re-fed after a crash, once), empties
   * the slot and returns the live count it held. */
  fire(slot: number, out: TimerEntry[]): number {
    const fine = this.wheels.fine;
    if (fine.lastPos(slot) === -1) return 0;
    if (fine.live(slot) > 0) {
      const deleted = new Set<number>();
      const live: TimerEntry[] = [];
      this.#walk(fine, slot, (r) => {
        if ((r.magic & MAGIC_DELETE) !== 0) deleted.add(r.commitLogOffset);
        else if (!deleted.has(r.commitLogOffset)) live.push(entryOf(r));
        return true;
      });
      live.reverse();
      const seen = new Set<number>();
      const unique = live.filter((e) =>
        !seen.has(e.commitLogOffset) && seen.add(e.commitLogOffset)
      );
      unique.sort((a, b) => a.deliverMs - b.deliverMs);
      for (const entry of unique) out.push(entry);
    }
    return fine.clear(slot);
  }

  /**
   * Copies the live timers of coarse slot `slot` into their fine slots, then appends
   * ROLL_DONE and empties the slot. The copies and ROLL_DONE are contiguous in the log
   * (nothing else runs meanwhile), which recovery relies on. Returns the change in the
   * number of live timers (0 unless the slot held duplicates).
   */
  roll(slot: number): number {
    const { fine, coarse, geometry } = this.wheels;
    if (coarse.lastPos(slot) === -1) return 0;
    let copies = 0;
    if (coarse.live(slot) > 0) {
      const deleted = new Set<number>();
      const copy = this.#copy;
      this.#walk(coarse, slot, (r) => {
        if ((r.magic & MAGIC_DELETE) !== 0) deleted.add(r.commitLogOffset);
        if ((r.magic & MAGIC_DELETE) !== 0 || deleted.has(r.commitLogOffset)) return true;
        const fineSlot = this.wheels.fineSlotOf(r.deliverMs);
        assert(fineSlot <= this.wheels.readSlot + geometry.windowSlots, "roll beyond the window");
        Object.assign(copy, r);
        copy.prevPos = fine.lastPos(fineSlot);
        copy.magic = MAGIC_DEFAULT | MAGIC_ROLLED;
        copy.slotMs = fineSlot * fine.precisionMs;
        fine.link(fineSlot, this.log.append(copy), 1);
        copies++;
        return true;
      });
    }
    const done = this.#copy;
    done.prevPos = -1;
    done.magic = MAGIC_ROLL_DONE;
    done.deliverMs = done.slotMs = slot * coarse.precisionMs;
    done.commitLogOffset = done.msgSize = done.enqueueMs = 0;
    this.log.append(done);
    return copies - coarse.clear(slot);
  }

  /** If the slot holds a timer of `commitLogOffset` not cancelled since, appends a DELETE
   * marker to the slot's chain and returns true. */
  cancel(
    wheel: WheelSlots,
    slot: number,
    commitLogOffset: number,
    deliverMs: number,
    nowMs: number,
  ): boolean {
    if (wheel.live(slot) === 0) return false;
    let found = false;
    this.#walk(wheel, slot, (r) => {
      if (r.commitLogOffset !== commitLogOffset) return true;
      found = (r.magic & MAGIC_DELETE) === 0; // the newest record of the offset decides
      return false;
    });
    if (!found) return false;
    const marker = this.#copy;
    marker.prevPos = wheel.lastPos(slot);
    marker.magic = (wheel === this.wheels.coarse ? MAGIC_ROLL : MAGIC_DEFAULT) | MAGIC_DELETE;
    marker.deliverMs = deliverMs;
    marker.commitLogOffset = commitLogOffset;
    marker.msgSize = 0;
    marker.enqueueMs = nowMs;
    marker.slotMs = slot * wheel.precisionMs;
    wheel.link(slot, this.log.append(marker), -1);
    return true;
  }

  /** Visits the slot's records newest first while `visit` returns true. */
  #walk(wheel: WheelSlots, slot: number, visit: (r: TimerRecord) => boolean): void {
    const r = this.#record;
    const slotMs = slot * wheel.precisionMs;
    const coarse = wheel === this.wheels.coarse;
    let pos = wheel.lastPos(slot);
    while (pos !== -1) {
      this.log.read(pos, r);
      assert(r.slotMs === slotMs, "timer chain left its slot");
      assert(isCoarse(r.magic) === coarse, "timer chain left its wheel");
      assert(r.prevPos < pos, "timer chain does not go backwards");
      pos = r.prevPos;
      if (!visit(r)) return;
    }
  }
}

function entryOf(r: TimerRecord): TimerEntry {
  return {
    deliverMs: r.deliverMs,
    commitLogOffset: r.commitLogOffset,
    msgSize: r.msgSize,
    enqueueMs: r.enqueueMs,
  };
}
