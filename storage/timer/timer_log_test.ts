import assert from "node:assert/strict";
import { crc32 } from "node:zlib";
import { SimDisk } from "../sim_disk.ts";
import { seededRandom } from "../testing.ts";
import { TimerLog } from "./timer_log.ts";
import {
  emptyRecord,
  MAGIC_DEFAULT,
  MAGIC_ROLL,
  TIMER_RECORD_BYTES,
  type TimerRecord,
} from "./timer_record.ts";

const DIR = "/t/timerlog";

function newLog(disk: SimDisk, records = 4) {
  const log = new TimerLog({
    files: disk,
    dir: DIR,
    segmentBytes: records * TIMER_RECORD_BYTES + 10, // a tail too short for a record
    retireMs: (r) => r.slotMs,
  });
  log.load();
  return log;
}

function timer(i: number, patch: Partial<TimerRecord> = {}): TimerRecord {
  return {
    ...emptyRecord(),
    magic: MAGIC_DEFAULT,
    deliverMs: 1_000 + i,
    commitLogOffset: 4096 * i,
    msgSize: 100 + i,
    enqueueMs: 7,
    slotMs: 1_000 + i,
    ...patch,
  };
}

function scanAll(log: TimerLog, contiguousFrom = 0) {
  const seen: number[] = [];
  const end = log.scan(contiguousFrom, (pos, r) => {
    seen.push(pos, r.commitLogOffset);
    return true;
  }, () => seen.push(-1));
  return { end, seen };
}

Deno.test("TimerLog.append() writes the documented 56-byte big-endian record", async () => {
  const disk = new SimDisk();
  const log = newLog(disk);
  const pos = log.append(timer(1, { prevPos: -1, magic: MAGIC_ROLL, slotMs: 60_000 }));
  assert.equal(pos, 0);
  await log.flush();
  const bytes = disk.durableBytes(`${DIR}/00000000000000000000`)!;
  const expected = new Uint8Array(56);
  const v = new DataView(expected.buffer);
  v.setInt32(0, 56);
  v.setInt32(4, -1); // prevPos -1, high word
  v.setInt32(8, -1);
  v.setInt32(12, MAGIC_ROLL);
  v.setInt32(20, 1_001); // deliverMs, low word
  v.setInt32(28, 4096);
  v.setInt32(32, 101);
  v.setInt32(40, 7);
  v.setInt32(48, 60_000);
  v.setUint32(52, crc32(expected.subarray(0, 52)));
  assert.deepEqual(bytes, expected);
  log.close();
});

Deno.test("TimerLog rolls segments, reads back, and gathers a tick into one write", async () => {
  const disk = new SimDisk();
  const log = newLog(disk);
  const writesBefore = disk.stats.writes;
  const positions = [...Array(10).keys()].map((i) => log.append(timer(i)));
  // 4 records a segment of 234 bytes: the 10-byte tail is skipped.
  assert.deepEqual(positions, [0, 56, 112, 168, 234, 290, 346, 402, 468, 524]);
  assert.equal(disk.stats.writes - writesBefore, 2, "a write per finished segment so far");
  const r = emptyRecord();
  log.read(524, r); // still gathered: read() writes it first
  assert.equal(r.commitLogOffset, 4096 * 9);
  log.read(234, r);
  assert.deepEqual(r, timer(4));
  await log.flush();
  assert.deepEqual(disk.list(DIR), [
    "00000000000000000000",
    "00000000000000000234",
    "00000000000000000468",
  ]);
  log.close();
  const reopened = newLog(disk);
  const { end, seen } = scanAll(reopened);
  assert.equal(end, 580);
  assert.deepEqual(seen.filter((_, i) => i % 2 === 1), [...Array(10).keys()].map((i) => 4096 * i));
  reopened.close();
});

Deno.test("TimerLog.scan() ends at a torn record and setEnd() cuts there", async () => {
  for (let seed = 1; seed <= 30; seed++) {
    const disk = new SimDisk();
    const log = newLog(disk, 8);
    for (let i = 0; i < 5; i++) log.append(timer(i));
    await log.flush();
    for (let i = 5; i < 20; i++) log.append(timer(i));
    log.writePending();
    disk.crash({ policy: "torn-tail", random: seededRandom(seed), keepUnsyncedNamesRatio: 0.5 });
    const reopened = newLog(disk, 8);
    const { end, seen } = scanAll(reopened);
    const count = seen.length / 2;
    assert.ok(count >= 5, `seed ${seed}: flushed records lost`);
    assert.deepEqual(
      seen.filter((_, i) => i % 2 === 1),
      [...Array(count).keys()].map((i) => 4096 * i),
    );
    reopened.setEnd(end);
    await reopened.flush();
    reopened.append(timer(99));
    await reopened.flush();
    reopened.close();
    const again = scanAll(newLog(disk, 8));
    assert.equal(again.seen.length / 2, count + 1, `seed ${seed}`);
    assert.equal(again.seen.at(-1), 4096 * 99);
  }
});

Deno.test("TimerLog.deleteSegmentsRetiredBy() spares live, recent and active segments", async () => {
  const disk = new SimDisk();
  const log = newLog(disk);
  for (let i = 0; i < 4; i++) log.append(timer(i, { slotMs: 100 }));
  for (let i = 4; i < 8; i++) log.append(timer(i, { slotMs: i === 5 ? 900 : 100 }));
  for (let i = 8; i < 14; i++) log.append(timer(i, { slotMs: 100 }));
  await log.flush();
  assert.equal(log.segmentCount, 4);
  assert.equal(log.deleteSegmentsRetiredBy(500, 234), 1, "only below the given position");
  assert.equal(log.deleteSegmentsRetiredBy(500, 1e9), 1, "segment 1 holds slot 900");
  assert.deepEqual(disk.list(DIR), ["00000000000000000234", "00000000000000000702"]);
  log.close();
  // A deleted segment is a gap the scan passes at or below contiguousFrom, an end above it.
  const passed = scanAll(newLog(disk), 702);
  assert.equal(passed.seen.filter((x) => x === -1).length, 1);
  assert.equal(passed.end, 814);
  assert.equal(scanAll(newLog(disk), 234).end, 468, "a gap after contiguousFrom ends the log");
  const active = newLog(disk);
  active.scan(702, () => true, () => {});
  active.setEnd(814);
  assert.equal(active.deleteSegmentsRetiredBy(1_000, 1e9), 1);
  assert.deepEqual(disk.list(DIR), ["00000000000000000702"], "never the active segment");
  active.close();
});
