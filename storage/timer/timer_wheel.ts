// The hierarchical wheel in memory (RocketMQ TimerWheel, without its file). Each slot
// holds the position of the newest record of its chain in the timer log (records point
// back through prevPos) and the count of its live timers: 12 bytes a slot, whatever the
// number of timers. The timer log is the durable state; open() rebuilds the slots from it
// (timer_rebuild.ts), so there is no wheel file to keep consistent with the log.
//
// A timer due at d sits in fine slot ceil(d / precisionMs), fired when readTime reaches
// slot x precisionMs >= d: never early, at most precisionMs - 1 late. A timer due a fine
// window or more past readTime sits in coarse slot ceil(d / coarsePrecisionMs); that slot
// is rolled (its live timers copied into fine slots) once its end is within the window.
import { assert } from "../errors.ts";
import type { WheelGeometry } from "./timer_config.ts";
import { isCoarse, type TimerRecord } from "./timer_record.ts";

/** Slots per chunk: a chunk (768 KiB) is allocated on the first link() into it. */
const CHUNK_SLOTS = 65_536;

/** The slots of one wheel. Slot numbers are absolute (time / precision); the array is
 * indexed modulo its length, which callers keep larger than the span of live slots. */
export class WheelSlots {
  /** Position + 1 of each slot's newest record, 0 if empty, in chunks allocated on first
   * use (~16 MiB at the defaults when all are; live slots are near readTime, so few are:
   * Bun sometimes touched a whole new 16 MiB array, bench/README.md "Round 5"). */
  readonly #lastPos: (Float64Array | undefined)[];
  readonly #live: (Int32Array | undefined)[];

  constructor(readonly slotCount: number, readonly precisionMs: number) {
    const chunks = Math.ceil(slotCount / CHUNK_SLOTS);
    this.#lastPos = new Array(chunks);
    this.#live = new Array(chunks);
  }

  /** Newest record of the slot's chain, -1 if empty. */
  lastPos(slot: number): number {
    const i = slot % this.slotCount;
    return (this.#lastPos[Math.floor(i / CHUNK_SLOTS)]?.[i % CHUNK_SLOTS] ?? 0) - 1;
  }
  /** Timers in the slot not cancelled (a re-fed duplicate counts twice). */
  live(slot: number): number {
    const i = slot % this.slotCount;
    return this.#live[Math.floor(i / CHUNK_SLOTS)]?.[i % CHUNK_SLOTS] ?? 0;
  }
  link(slot: number, pos: number, liveDelta: number): void {
    const i = slot % this.slotCount;
    const c = Math.floor(i / CHUNK_SLOTS), j = i % CHUNK_SLOTS;
    if (this.#live[c] === undefined) {
      const n = Math.min(CHUNK_SLOTS, this.slotCount - c * CHUNK_SLOTS);
      this.#lastPos[c] = new Float64Array(n);
      this.#live[c] = new Int32Array(n);
    }
    const live = this.#live[c]!;
    this.#lastPos[c]![j] = pos + 1;
    live[j] += liveDelta;
    assert(live[j] >= 0, "negative live count in a timer slot");
  }
  /** Empties the slot; returns the live timers it held. */
  clear(slot: number): number {
    const i = slot % this.slotCount;
    const c = Math.floor(i / CHUNK_SLOTS), j = i % CHUNK_SLOTS;
    const live = this.#live[c];
    if (live === undefined) return 0;
    const n = live[j];
    this.#lastPos[c]![j] = 0;
    live[j] = 0;
    return n;
  }
  reset(): void {
    this.#lastPos.fill(undefined);
    this.#live.fill(undefined);
  }
  /** The most the slots take, once every chunk is in use (12 bytes a slot). */
  memoryBytes(): number {
    return this.slotCount * (Float64Array.BYTES_PER_ELEMENT + Int32Array.BYTES_PER_ELEMENT);
  }
  /** What the chunks in use take now. */
  allocatedBytes(): number {
    return this.#live.reduce((sum, c) => sum + (c ? c.length * 12 : 0), 0);
  }
}

export interface Placement {
  coarse: boolean;
  slot: number;
}

/** Both wheels and the read cursor: pure arithmetic, no I/O. */
export class TimerWheels {
  readonly fine: WheelSlots;
  readonly coarse: WheelSlots;
  /** Last fired fine slot: every timer in a slot <= readSlot has been handed out. */
  readSlot: number;
  /** readSlot saved by the last checkpoint: recovery restarts there. */
  checkpointReadSlot: number;
  /** First coarse slot not yet rolled. */
  rollCursor: number;
  /** Highest fine slot that may hold a timer later than its own slot (added when already
   * due). cancel() looks for such timers up to here: after a crash the wheel restarts
   * behind them, and a re-fed copy of the same timer lands in its own slot. */
  shiftedSlotMax = 0;

  constructor(readonly geometry: WheelGeometry, readTimeMs: number) {
    assert(readTimeMs % geometry.precisionMs === 0, "readTime not on a slot boundary");
    this.fine = new WheelSlots(geometry.fineSlots, geometry.precisionMs);
    this.coarse = new WheelSlots(geometry.coarseSlots, geometry.coarsePrecisionMs);
    this.readSlot = this.checkpointReadSlot = readTimeMs / geometry.precisionMs;
    this.rollCursor = this.rollCursorAt(readTimeMs);
  }

  get readTimeMs(): number {
    return this.readSlot * this.geometry.precisionMs;
  }

  /** First coarse slot not yet rolled at `readTimeMs`: slot c is rolled once
   * c x coarsePrecisionMs < readTime + fineWindowMs. */
  rollCursorAt(readTimeMs: number): number {
    const { fineWindowMs, coarsePrecisionMs } = this.geometry;
    return Math.ceil((readTimeMs + fineWindowMs) / coarsePrecisionMs);
  }

  /** Last readSlot reachable before a checkpoint is needed (see WheelGeometry.lagSlots). */
  get readSlotLimit(): number {
    return this.checkpointReadSlot + this.geometry.lagSlots;
  }

  /** Fine slot of a timer due at `deliverMs`; one already due goes to the next to fire
   * (a "shifted" timer: see shiftedSlotMax). */
  fineSlotOf(deliverMs: number): number {
    const natural = Math.ceil(deliverMs / this.geometry.precisionMs);
    if (natural > this.readSlot) return natural;
    this.shiftedSlotMax = Math.max(this.shiftedSlotMax, this.readSlot + 1);
    return this.readSlot + 1;
  }

  /** Where a new timer goes, or undefined when its coarse slot is still held by the
   * previous turn of the wheel (readTime or the checkpoint lags far behind). */
  place(deliverMs: number): Placement | undefined {
    const { fineWindowMs, coarsePrecisionMs } = this.geometry;
    if (deliverMs < this.readTimeMs + fineWindowMs) {
      return { coarse: false, slot: this.fineSlotOf(deliverMs) };
    }
    const slot = Math.ceil(deliverMs / coarsePrecisionMs);
    assert(slot >= this.rollCursor, "coarse timer behind the roll cursor");
    return slot < this.coarseSlotLimit ? { coarse: true, slot } : undefined;
  }

  /** Live coarse slots stay below it: a slot at or past it could share its index with one
   * that recovery from the last checkpoint would rebuild. */
  get coarseSlotLimit(): number {
    const checkpointReadTimeMs = this.checkpointReadSlot * this.geometry.precisionMs;
    return this.rollCursorAt(checkpointReadTimeMs) + this.geometry.coarseSlots;
  }

  /** Live fine slots are readSlot + 1 .. fineSlotLimit. */
  get fineSlotLimit(): number {
    return this.readSlot + this.geometry.fineSlots;
  }

  /** The readTime from which a record is no longer needed, even by recovery from a
   * checkpoint taken then: a fine slot's records once it fires, a coarse slot's once
   * it is rolled (the first readTime with slot x coarsePrecisionMs < readTime + window). */
  retireMs(record: TimerRecord): number {
    if (!isCoarse(record.magic)) return record.slotMs;
    return record.slotMs - this.geometry.fineWindowMs + this.geometry.precisionMs;
  }

  memoryBytes(): number {
    return this.fine.memoryBytes() + this.coarse.memoryBytes();
  }
}
