import assert from "node:assert/strict";
import { SimDisk } from "./sim_disk.ts";
import { MessageStore } from "./message_store.ts";
import { smallStoreConfig, storeCore, testMessage } from "./testing.ts";

const enc = new TextEncoder();

Deno.test("MessageReader.getMessage() logs and counts a record whose CRC fails, and serves the records around it", async () => {
  const logged: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const store = new MessageStore({
    files: new SimDisk(),
    // 8 KiB segments: the tail cache holds only the newest, so early records come from disk.
    config: smallStoreConfig("/data", { mappedFileSizeCommitLog: 8 * 1024 }),
    nowMs: () => 1_700_000_000_000,
    log: (level, msg, fields) => logged.push({ level, msg, fields }),
  });
  await store.open();
  for (let i = 0; i < 60; i++) {
    await store.putMessage(testMessage("T", 0, enc.encode(`m${i}-${"x".repeat(300)}`)));
  }
  assert.equal(store.stats().corruptReads, 0);
  const victim = store.getMessage("T", 0, 1, { maxMsgNums: 1, maxBytes: 1 << 20 }).messages[0]
    .record;
  assert.ok(store.stats().segments > 2, "the victim's segment is not the newest");
  const segment = storeCore(store).commitLog.findSegment(victim.physicalOffset)!;
  // Read alone, the record's buffer starts at the record: the body view's offset is its place.
  const bodyAt = victim.physicalOffset - segment.startOffset + victim.body.byteOffset;
  segment.file.writeAt(new Uint8Array([0xff ^ victim.body[0]]), bodyAt);

  const got = store.getMessage("T", 0, 0, { maxMsgNums: 3, maxBytes: 1 << 20 });
  assert.deepEqual(got.messages.map((m) => m.queueOffset), [0, 2]);
  assert.equal(got.nextBeginOffset, 3);
  assert.equal(store.stats().corruptReads, 1);
  assert.deepEqual(logged.filter((l) => l.level === "error"), [{
    level: "error",
    msg: "read skipped a corrupt record",
    fields: {
      err:
        `CorruptRecordError: Corrupt record at commit-log offset ${victim.physicalOffset}: body CRC mismatch`,
      offset: victim.physicalOffset,
      reason: "body CRC mismatch",
      corruptReads: 1,
    },
  }]);

  // By offset: the damaged record is not served and counts; a stray offset is only not found.
  assert.equal(store.lookMessageByOffset(victim.physicalOffset), undefined);
  assert.equal(store.stats().corruptReads, 2);
  assert.equal(store.lookMessageByOffset(victim.physicalOffset + 1), undefined);
  assert.equal(store.stats().corruptReads, 2);

  // Every read counts; the log keeps the 1st, 2nd, 4th, 8th… so readers cannot flood it.
  for (let i = 0; i < 6; i++) store.getMessage("T", 0, 1, { maxMsgNums: 1, maxBytes: 1 << 20 });
  assert.equal(store.stats().corruptReads, 8);
  assert.deepEqual(
    logged.filter((l) => l.level === "error").map((l) => l.fields?.corruptReads),
    [1, 2, 4, 8],
  );
  await store.close();
});

Deno.test("MessageStore.stats() reports offsets, segments and writability", async () => {
  const store = new MessageStore({
    files: new SimDisk(),
    config: smallStoreConfig("/data", { flushDiskType: "SYNC_FLUSH" }),
    nowMs: () => 1_700_000_000_000,
  });
  await store.open();
  const put = await store.putMessage(testMessage("T", 0, enc.encode("one")));
  const end = put.commitLogOffset + put.size;
  assert.deepEqual(store.stats(), {
    wroteOffset: end,
    flushedOffset: end,
    confirmOffset: end,
    dispatchedOffset: end,
    minPhysicalOffset: 0,
    segments: 1,
    corruptReads: 0,
    writable: true,
    writableChanges: 0,
  });
  await store.close();
  assert.equal(store.stats().writable, false);
  assert.equal(store.stats().writableChanges, 0, "closing is not a fault");
});
