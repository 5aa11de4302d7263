import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { ConsumeQueue, CQ_UNIT_BYTES } from "./consume_queue.ts";
import { ConsumeQueueStore } from "./consume_queue_store.ts";
import { readFully } from "../file_port.ts";

function newQueue(disk: SimDisk, unitsPerFile = 10) {
  const cq = new ConsumeQueue(disk, "/s/consumequeue", "T", 1, unitsPerFile);
  cq.load();
  return cq;
}

Deno.test("ConsumeQueue.put() writes 20-byte units with sign-extended tagsCode", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk);
  cq.put(0, 4096, 300, -5);
  cq.flushWrites();
  const file = disk.open("/s/consumequeue/T/1/00000000000000000000");
  assert.equal(file.size(), 10 * CQ_UNIT_BYTES);
  const unit = readFully(file, 0, 20);
  assert.deepEqual(
    Array.from(unit),
    [0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 0x2c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb],
  );
  assert.deepEqual(cq.get(0), { queueOffset: 0, commitLogOffset: 4096, size: 300, tagsCode: -5 });
  cq.close();
});

Deno.test("ConsumeQueue lookups cross file boundaries and survive reload", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk, 10);
  for (let i = 0; i < 25; i++) cq.put(i, i * 100, 100, i);
  assert.equal(cq.maxOffset, 25);
  cq.flushWrites();
  assert.deepEqual(disk.list("/s/consumequeue/T/1"), [
    "00000000000000000000",
    "00000000000000000200",
    "00000000000000000400",
  ]);
  assert.equal(cq.get(19)!.commitLogOffset, 1900);
  assert.equal(cq.get(20)!.commitLogOffset, 2000);
  assert.equal(cq.get(25), undefined);
  // range() stays within one file, as RocketMQ reads one CQ file per pull.
  assert.deepEqual(cq.range(8, 5).map((u) => u.queueOffset), [8, 9]);
  cq.close();
  const again = newQueue(disk, 10);
  assert.equal(again.maxOffset, 25);
  assert.equal(again.minOffset, 0);
  assert.equal(again.maxPhysicOffset, 2500);
  assert.equal(again.get(24)!.tagsCode, 24);
  again.close();
});

Deno.test("ConsumeQueue.put() skips units it already has (re-dispatch is harmless)", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk);
  cq.put(0, 0, 100, 0);
  cq.put(1, 100, 100, 0);
  cq.put(0, 0, 100, 0);
  cq.put(1, 100, 100, 0);
  assert.equal(cq.maxOffset, 2);
  cq.close();
});

Deno.test("ConsumeQueue.truncateFromPhysical() drops units at and beyond an offset", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk, 10);
  for (let i = 0; i < 15; i++) cq.put(i, i * 100, 100, 0);
  cq.truncateFromPhysical(1250);
  assert.equal(cq.maxOffset, 13);
  assert.equal(cq.maxPhysicOffset, 1300);
  cq.truncateFromPhysical(500);
  assert.equal(cq.maxOffset, 5);
  assert.deepEqual(disk.list("/s/consumequeue/T/1"), ["00000000000000000000"]);
  cq.close();
  assert.equal(newQueue(disk, 10).maxOffset, 5);
});

Deno.test("ConsumeQueue.offsetAtTime() finds the first message stored at or after a time", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk, 10);
  const times = [10, 20, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110];
  times.forEach((_, i) => cq.put(i, i * 100, 100, 0));
  const timeOf = (u: { commitLogOffset: number }) => times[u.commitLogOffset / 100];
  assert.equal(cq.offsetAtTime(20, timeOf), 1);
  assert.equal(cq.offsetAtTime(21, timeOf), 3);
  assert.equal(cq.offsetAtTime(0, timeOf), 0);
  assert.equal(cq.offsetAtTime(105, timeOf), 11);
  assert.equal(cq.offsetAtTime(1000, timeOf), 12);
  cq.close();
});

Deno.test("ConsumeQueue.deleteBelow() drops whole old files and moves minOffset", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk, 10);
  for (let i = 0; i < 25; i++) cq.put(i, i * 100, 100, 0);
  cq.deleteBelow(1450);
  assert.equal(cq.minOffset, 15);
  assert.deepEqual(disk.list("/s/consumequeue/T/1"), [
    "00000000000000000200",
    "00000000000000000400",
  ]);
  cq.close();
  const again = newQueue(disk, 10);
  assert.equal(again.minOffset, 10);
  again.deleteBelow(1450);
  assert.equal(again.minOffset, 15);
  again.close();
});

Deno.test("ConsumeQueue starting mid-file is padded in front", () => {
  const disk = new SimDisk();
  const cq = newQueue(disk, 10);
  cq.put(13, 5000, 100, 0);
  assert.equal(cq.minOffset, 13);
  assert.equal(cq.maxOffset, 14);
  cq.close();
  const again = newQueue(disk, 10);
  assert.equal(again.minOffset, 13);
  assert.equal(again.maxOffset, 14);
  again.close();
});

Deno.test("ConsumeQueueStore.datasyncAll(policy) syncs the queues due and bounds the rest", async () => {
  const disk = new SimDisk();
  const store = new ConsumeQueueStore(disk, "/s", 10);
  store.load();
  const policy = { leastUnits: 3, maxSkips: 2 };
  const busy = store.getOrCreate("busy", 0);
  const sparse = store.getOrCreate("sparse", 0);
  for (let i = 0; i < 3; i++) busy.put(i, 1000 + i * 100, 100, 0);
  sparse.put(0, 1050, 10, 0);
  const synced = () => disk.stats.datasyncs;
  let before = synced();
  // busy has 3 new units (due); sparse has 1: skipped, so only below 1050 is durable.
  assert.equal(await store.datasyncAll(policy), 1050);
  assert.equal(busy.needsSync, false);
  assert.equal(sparse.needsSync, true);
  assert.ok(synced() > before);
  sparse.put(1, 2000, 10, 0);
  assert.equal(await store.datasyncAll(policy), 1050, "skipped twice: still the first unit");
  before = synced();
  assert.equal(await store.datasyncAll(policy), Infinity, "maxSkips reached: synced");
  assert.equal(sparse.needsSync, false);
  assert.ok(synced() > before);
  // Without a policy every queue with anything new is synced.
  sparse.put(2, 3000, 10, 0);
  assert.equal(await store.datasyncAll(), Infinity);
  assert.equal(sparse.needsSync, false);
  store.close();
});
