// A full disk heals (no_space.ts): ENOSPC on a CommitLog write refuses writes, cuts off what
// landed of the failed write, resumes once space is back, and loses nothing acknowledged.
import assert from "node:assert/strict";
import { SimDisk } from "./sim_disk.ts";
import { MessageStore, type PutResult } from "./message_store.ts";
import { smallStoreConfig, storeCore, testMessage } from "./testing.ts";
import type { FlushDiskType, StoreConfig } from "./config.ts";
import { StoreError } from "./errors.ts";
import { resumeIfSpace } from "./no_space.ts";
import type { StoreLog } from "./store_types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

type Line = { level: string; msg: string; fields?: Record<string, unknown> };

function newStore(disk: SimDisk, patch: Partial<StoreConfig>, lines: Line[] = []) {
  const log: StoreLog = (level, msg, fields) => lines.push({ level, msg, fields });
  return new MessageStore({
    files: disk,
    config: smallStoreConfig("/data", {
      mappedFileSizeCommitLog: 64 * 1024,
      noSpaceResumeBytes: 8192,
      // Smaller than a burst: a put's append writes what earlier puts of its turn gathered.
      writeBatchBytesMax: 4096,
      ...patch,
    }),
    nowMs: () => 1_700_000_000_000,
    log,
  });
}

/** Puts `n` messages in one event-loop turn; returns what each put settled to. */
function putBurst(store: MessageStore, from: number, n: number, bodyBytes = 300) {
  return Promise.allSettled(
    [...Array(n).keys()].map((i) =>
      store.putMessage(testMessage("T", 0, enc.encode(`m${from + i}`.padEnd(bodyBytes, ".")), {}))
    ),
  );
}

/** Every message of queue T:0, in order (a read stops at a ConsumeQueue file's end). */
function bodies(store: MessageStore): string[] {
  const out: string[] = [];
  for (let offset = 0;;) {
    const got = store.getMessage("T", 0, offset, { maxMsgNums: 1000, maxBytes: 1 << 24 });
    if (got.status !== "FOUND") return out;
    for (const m of got.messages) {
      assert.equal(m.record.queueOffset, m.queueOffset);
      out.push(dec.decode(m.record.body).replace(/\.+$/, ""));
    }
    offset = got.nextBeginOffset;
  }
}

for (const flushDiskType of ["ASYNC_FLUSH", "SYNC_FLUSH"] as FlushDiskType[]) {
  Deno.test(`MessageStore (${flushDiskType}) refuses on ENOSPC, cuts what landed, resumes once space is free, keeps every ack`, async () => {
    const disk = new SimDisk();
    const lines: Line[] = [];
    const store = newStore(disk, { flushDiskType, segmentZeroFill: false }, lines);
    await store.open();
    const acked: string[] = [];
    const offsets: number[] = [];
    const note = (settled: PromiseSettledResult<PutResult>[], from: number) => {
      settled.forEach((s, i) => {
        if (s.status !== "fulfilled") return;
        acked.push(`m${from + i}`);
        offsets.push(s.value.queueOffset);
      });
      return settled.filter((s) => s.status === "rejected").map((s) => s.reason);
    };
    assert.deepEqual(note(await putBurst(store, 0, 10), 0), []);
    // Room for about a page and a half more: the next burst's one write lands in part.
    disk.setCapacity(disk.usedBytes + 6000);
    const refused = note(await putBurst(store, 10, 40), 10);
    assert.ok(refused.length > 0, "some puts are refused");
    for (const err of refused) {
      assert.ok(err instanceof StoreError && err.code === "STORE_NOT_WRITABLE", String(err));
    }
    assert.equal(store.writable, false);
    assert.equal(storeCore(store).gate.fault, "no-space");
    // What landed of the failed write is cut off: zeros past the written end.
    const core = storeCore(store);
    const seg = core.commitLog.segments.at(-1)!;
    const tail = new Uint8Array(seg.endOffset - core.commitLog.wroteOffset);
    seg.file.readAt(tail, 0, tail.length, core.commitLog.wroteOffset - seg.startOffset);
    assert.ok(tail.every((b) => b === 0), "no byte of the failed write remains");
    // Still full: stays refused, however often it is asked.
    assert.equal(await resumeIfSpace(core), false);
    await assert.rejects(store.putMessage(testMessage("T", 0, enc.encode("x"))), StoreError);
    // Space is back: writes resume, queue offsets continue without a gap.
    disk.setCapacity(undefined);
    assert.equal(await resumeIfSpace(core), true);
    assert.equal(store.writable, true);
    // (Records of another size than the refused ones: a stale dispatch would show.)
    assert.deepEqual(note(await putBurst(store, 100, 5, 500), 100), []);
    assert.deepEqual(offsets, [...acked.keys()]);
    assert.deepEqual(bodies(store), acked);
    // One error line when it stopped, one info line when it resumed, two changes counted.
    const changes = lines.filter((l) => l.msg.startsWith("store "));
    assert.deepEqual(changes.map((l) => [l.level, l.msg, l.fields?.cause ?? l.fields?.after]), [
      ["error", "store stopped accepting writes", "no-space"],
      ["info", "store accepts writes again", "no-space"],
    ]);
    assert.equal(store.stats().writableChanges, 2);
    await store.close();
    // Restart: every acknowledged message is there, and nothing that was refused.
    const again = newStore(disk, { flushDiskType, segmentZeroFill: false });
    await again.open();
    assert.deepEqual(bodies(again), acked);
    await again.close();
  });
}

Deno.test("MessageStore after ENOSPC and a power loss recovers every SYNC_FLUSH ack and no refused message", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, { flushDiskType: "SYNC_FLUSH", segmentZeroFill: false });
  await store.open();
  const acked: string[] = [];
  for (const [from, n] of [[0, 10], [10, 40]]) {
    if (from === 10) disk.setCapacity(disk.usedBytes + 6000);
    (await putBurst(store, from, n)).forEach((s, i) =>
      s.status === "fulfilled" && acked.push(`m${from + i}`)
    );
  }
  assert.equal(store.writable, false);
  await storeCore(store).gate.noSpace!.cut;
  disk.crash({ policy: "drop-unsynced", random: () => 0.5 });
  disk.setCapacity(undefined);
  const again = newStore(disk, { flushDiskType: "SYNC_FLUSH", segmentZeroFill: false });
  await again.open();
  assert.deepEqual(bodies(again), acked);
  await again.close();
});

Deno.test("WriteGate logs each fault once at error level, its end at info, and counts both", async () => {
  const disk = new SimDisk();
  const lines: Line[] = [];
  const store = newStore(disk, { flushDiskType: "SYNC_FLUSH", segmentZeroFill: false }, lines);
  await store.open();
  await store.putMessage(testMessage("T", 0, enc.encode("a")));
  const gate = storeCore(store).gate;
  gate.diskFull = true;
  gate.diskFull = true; // retention runs again: no new line
  await assert.rejects(store.putMessage(testMessage("T", 0, enc.encode("b"))), StoreError);
  gate.diskFull = false;
  const seg = storeCore(store).commitLog.segments[0];
  disk.failDatasync(seg.file.path);
  await assert.rejects(store.putMessage(testMessage("T", 0, enc.encode("c"))), StoreError);
  await assert.rejects(store.putMessage(testMessage("T", 0, enc.encode("d"))), StoreError);
  assert.deepEqual(
    lines.filter((l) => l.msg.startsWith("store ")).map((l) => [
      l.level,
      l.fields?.cause ?? l.fields?.after,
    ]),
    [["error", "disk-full"], ["info", "disk-full"], ["error", "failed"]],
  );
  assert.equal(store.stats().writableChanges, 3);
  // A failed fdatasync is final: no space check resumes it.
  assert.equal(await resumeIfSpace(storeCore(store)), false);
  assert.equal(store.writable, false);
  await store.close();
});

Deno.test("MessageStore stops on ENOSPC in a ConsumeQueue write and resumes once dispatch catches up", async () => {
  const disk = new SimDisk();
  const store = newStore(disk, {
    mappedFileSizeCommitLog: 1024 * 1024,
    mappedFileSizeConsumeQueueUnits: 10_000,
    writeBatchBytesMax: 1024 * 1024,
  });
  await store.open();
  // A ConsumeQueue keeps 3276 units (64 KiB) in memory and writes them when the next comes.
  for (let i = 0; i < 3275; i++) await store.putMessage(testMessage("T", 0, enc.encode(`m${i}`)));
  disk.setCapacity(disk.usedBytes + 4096); // room for the CommitLog write, not the units
  const last = await store.putMessage(testMessage("T", 0, enc.encode("m3275")));
  assert.equal(last.queueOffset, 3275, "the record was written: its put succeeds");
  assert.equal(storeCore(store).gate.fault, "no-space");
  assert.equal(await resumeIfSpace(storeCore(store)), false);
  disk.setCapacity(undefined);
  assert.equal(await resumeIfSpace(storeCore(store)), true);
  assert.equal(
    (await store.putMessage(testMessage("T", 0, enc.encode("m3276")))).queueOffset,
    3276,
  );
  assert.deepEqual(bodies(store), [...Array(3277).keys()].map((i) => `m${i}`));
  await store.close();
});
