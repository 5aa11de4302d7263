// The index's slot table allocates its chunks on their first non-zero slot, reads unallocated
// slots as 0, and hands out a run of pages as the file's big-endian bytes.
import assert from "node:assert/strict";
import { INDEX_SLOT_BYTES, SLOT_RUN_PAGES_MAX, SLOTS_PER_PAGE, SlotTable } from "./index_layout.ts";

const CHUNK = SLOT_RUN_PAGES_MAX * SLOTS_PER_PAGE;

Deno.test("SlotTable: chunks on first use, zeros elsewhere, file bytes per run", () => {
  const length = 5 * CHUNK + 123; // a short last chunk
  const t = new SlotTable(length);
  assert.equal(t.allocatedChunks, 0);
  t.set(7, 0);
  assert.equal(t.allocatedChunks, 0, "a zero allocates nothing");
  const slots = [0, 7, CHUNK - 1, CHUNK, 3 * CHUNK + 5, length - 1];
  slots.forEach((s, i) => t.set(s, 1000 + i));
  assert.equal(t.allocatedChunks, 4);
  slots.forEach((s, i) => assert.equal(t.get(s), 1000 + i));
  assert.equal(t.get(2 * CHUNK + 9), 0);
  // A run's bytes as the file holds them: big-endian int32s.
  const run = t.slice(CHUNK - SLOTS_PER_PAGE, CHUNK);
  assert.equal(run.length, SLOTS_PER_PAGE * INDEX_SLOT_BYTES);
  assert.equal(new DataView(run.buffer, run.byteOffset).getInt32(run.length - 4), 1002);
  assert.deepEqual(t.slice(2 * CHUNK, 2 * CHUNK + 2), new Uint8Array(8), "unallocated: zeros");
  assert.throws(() => t.slice(CHUNK - 1, CHUNK + 1), /within one chunk/);
  // Back from the file's bytes: the same slots, all-zero chunks left out.
  const bytes = new Uint8Array(length * INDEX_SLOT_BYTES);
  for (let c = 0; c * CHUNK < length; c++) {
    const end = Math.min((c + 1) * CHUNK, length);
    bytes.set(t.slice(c * CHUNK, end), c * CHUNK * INDEX_SLOT_BYTES);
  }
  const back = SlotTable.of(bytes, length);
  assert.equal(back.allocatedChunks, 4);
  for (let s = 0; s < length; s += 97) assert.equal(back.get(s), t.get(s));
  slots.forEach((s, i) => assert.equal(back.get(s), 1000 + i));
});
