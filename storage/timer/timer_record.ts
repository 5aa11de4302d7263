// One timer-log record. RocketMQ's is 52 bytes (reference/rocketmq.md §8); we keep its
// leading fields and add two: the slot the record is chained in (an entry added when
// already due sits in a later slot than its deliverMs says, and recovery must find it
// there), and a CRC, so a torn tail is recognised record by record. Big-endian:
//
//    0 int  size             56
//    4 long prevPos          previous record of the same slot; -1 starts the chain
//   12 int  magic            see below
//   16 long deliverMs
//   24 long commitLogOffset  the caller's message, re-put when the timer fires
//   32 int  msgSize
//   36 long enqueueMs        the caller's time at add (RocketMQ TIMER_ENQUEUE_MS)
//   44 long slotMs           slot number x precision of the record's wheel
//   52 int  crc32 of bytes 0..51
import { crc32 } from "../crc32.ts";
import { getLong, setLong } from "../message/record.ts";

export const TIMER_RECORD_BYTES = 56;
const CRC_AT = 52;

/** A timer in a fine slot, delivered when the slot fires (RocketMQ MAGIC_DEFAULT). */
export const MAGIC_DEFAULT = 1;
/** A timer in a coarse slot, copied into a fine slot when its slot comes within the fine
 * window (RocketMQ MAGIC_ROLL). */
export const MAGIC_ROLL = 2;
/** With DEFAULT or ROLL: cancels the timers of the same commitLogOffset that precede it in
 * its slot's chain (RocketMQ MAGIC_DELETE). */
export const MAGIC_DELETE = 4;
/** With DEFAULT: a copy made by a roll. One roll's copies are contiguous and end with
 * ROLL_DONE, so recovery can tell a roll cut by a crash and undo it. */
export const MAGIC_ROLLED = 8;
/** The coarse slot at slotMs has been rolled; chained in no slot (prevPos -1). */
export const MAGIC_ROLL_DONE = 16;

const VALID_MAGICS = new Set([
  MAGIC_DEFAULT,
  MAGIC_ROLL,
  MAGIC_DEFAULT | MAGIC_DELETE,
  MAGIC_ROLL | MAGIC_DELETE,
  MAGIC_DEFAULT | MAGIC_ROLLED,
  MAGIC_ROLL_DONE,
]);

/** Decoded record; hot loops reuse one instance (no allocation per record). */
export interface TimerRecord {
  prevPos: number;
  magic: number;
  deliverMs: number;
  commitLogOffset: number;
  msgSize: number;
  enqueueMs: number;
  slotMs: number;
}

export function emptyRecord(): TimerRecord {
  return {
    prevPos: -1,
    magic: 0,
    deliverMs: 0,
    commitLogOffset: 0,
    msgSize: 0,
    enqueueMs: 0,
    slotMs: 0,
  };
}

export function isCoarse(magic: number): boolean {
  return (magic & MAGIC_ROLL) !== 0 || magic === MAGIC_ROLL_DONE;
}

/** Writes `record` and its CRC at `bytes[at..at+56)`. */
export function encodeRecord(bytes: Uint8Array, view: DataView, at: number, r: TimerRecord) {
  view.setInt32(at, TIMER_RECORD_BYTES);
  setLong(view, at + 4, r.prevPos);
  view.setInt32(at + 12, r.magic);
  setLong(view, at + 16, r.deliverMs);
  setLong(view, at + 24, r.commitLogOffset);
  view.setInt32(at + 32, r.msgSize);
  setLong(view, at + 36, r.enqueueMs);
  setLong(view, at + 44, r.slotMs);
  view.setUint32(at + CRC_AT, crc32(bytes.subarray(at, at + CRC_AT)));
}

/** Fills `out` from `bytes[at..]`; false for a torn, zero or foreign record (size, magic
 * and CRC are all checked, so a half-written tail is never taken for a timer). */
export function decodeRecord(
  bytes: Uint8Array,
  view: DataView,
  at: number,
  out: TimerRecord,
): boolean {
  if (at + TIMER_RECORD_BYTES > bytes.length) return false;
  if (view.getInt32(at) !== TIMER_RECORD_BYTES) return false;
  if (view.getUint32(at + CRC_AT) !== crc32(bytes.subarray(at, at + CRC_AT))) return false;
  const magic = view.getInt32(at + 12);
  if (!VALID_MAGICS.has(magic)) return false;
  out.prevPos = getLong(view, at + 4);
  out.magic = magic;
  out.deliverMs = getLong(view, at + 16);
  out.commitLogOffset = getLong(view, at + 24);
  out.msgSize = view.getInt32(at + 32);
  out.enqueueMs = getLong(view, at + 36);
  out.slotMs = getLong(view, at + 44);
  return true;
}
