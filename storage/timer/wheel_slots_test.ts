// Wheel slots are held in chunks allocated on their first link: an empty wheel takes no
// slot memory, and an unallocated slot reads as empty.
import assert from "node:assert/strict";
import { WheelSlots } from "./timer_wheel.ts";

Deno.test("WheelSlots: chunks on the first link, empty slots read as empty", () => {
  const slots = new WheelSlots(1_440_000, 1000);
  assert.equal(slots.allocatedBytes(), 0);
  assert.equal(slots.memoryBytes(), 1_440_000 * 12, "the bound stays what it was");
  assert.equal(slots.lastPos(123_456_789), -1);
  assert.equal(slots.live(5), 0);
  assert.equal(slots.clear(5), 0);
  assert.equal(slots.allocatedBytes(), 0, "reads and clears allocate nothing");
  slots.link(1_440_000 + 7, 42, 1); // the same index as slot 7
  slots.link(1_439_999, 9, 2); // the last, short chunk
  assert.equal(slots.lastPos(7), 42);
  assert.equal(slots.live(7), 1);
  assert.equal(slots.live(1_439_999), 2);
  assert.equal(slots.allocatedBytes(), (65_536 + (1_440_000 % 65_536)) * 12);
  assert.equal(slots.clear(7), 1);
  assert.equal(slots.lastPos(7), -1);
  assert.throws(() => slots.link(8, 1, -1), /negative live count/);
  slots.reset();
  assert.equal(slots.allocatedBytes(), 0);
  assert.equal(slots.live(1_439_999), 0);
});
