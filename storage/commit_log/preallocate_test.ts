// Preallocation never starves live writes (preallocate.ts): it waits for room for the whole
// segment plus the reserve, and a live write that finds the disk full takes its space.
import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { MessageStore } from "../message_store.ts";
import { smallStoreConfig, storeCore, testMessage } from "../testing.ts";
import { PREALLOC_SUFFIX } from "./preallocate.ts";

const SEGMENT = 64 * 1024;
const enc = new TextEncoder();

function newStore(disk: SimDisk) {
  return new MessageStore({
    files: disk,
    config: smallStoreConfig("/data", {
      mappedFileSizeCommitLog: SEGMENT,
      segmentZeroFill: true,
      flushDiskType: "SYNC_FLUSH",
      noSpaceResumeBytes: 4096,
      noSpaceRetryMs: 5,
    }),
    nowMs: () => 1_700_000_000_000,
  });
}

const preallocFiles = (disk: SimDisk) =>
  disk.list("/data/commitlog").filter((n) => n.endsWith(PREALLOC_SUFFIX));

async function until(what: string, ok: () => boolean, ms = 3000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("SegmentPreparation waits while the disk lacks room for the segment plus the reserve", async () => {
  const disk = new SimDisk();
  const store = newStore(disk);
  await store.open();
  // Room for the segment, but the fill would leave less than 10% of the disk plus 4 KiB free.
  disk.setCapacity(disk.usedBytes + SEGMENT + 8192);
  await store.putMessage(testMessage("T", 0, enc.encode("a")));
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(disk.list("/data/commitlog"), ["00000000000000000000"], "no zero-fill");
  assert.ok(disk.usedBytes < SEGMENT / 2, `nothing taken: ${disk.usedBytes} bytes used`);
  // Room is back: the fill starts and finishes by itself.
  disk.setCapacity(disk.usedBytes + SEGMENT * 4);
  await until("the next segment", () => disk.list("/data/commitlog").length === 2);
  await storeCore(store).commitLog.nextSegmentSettled;
  assert.deepEqual(preallocFiles(disk), []);
  assert.equal(disk.usedBytes >= SEGMENT, true);
  await store.close();
});

Deno.test("CommitLog gives a prepared segment's space to a live write that finds the disk full", async () => {
  const disk = new SimDisk();
  const store = newStore(disk);
  await store.open();
  await store.putMessage(testMessage("T", 0, enc.encode("a")));
  await until("the next segment", () => disk.list("/data/commitlog").length === 2);
  await storeCore(store).commitLog.nextSegmentSettled;
  // The disk is now full: the only free space is what the prepared segment holds.
  disk.setCapacity(disk.usedBytes);
  const put = await store.putMessage(testMessage("T", 0, enc.encode("b".repeat(6000))));
  assert.equal(put.queueOffset, 1);
  assert.equal(store.writable, true);
  assert.deepEqual(disk.list("/data/commitlog"), ["00000000000000000000"]);
  await store.close();
});
