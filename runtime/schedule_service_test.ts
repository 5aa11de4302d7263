import assert from "node:assert/strict";
import { ScheduleService } from "./schedule_service.ts";
import type { Logger } from "./log.ts";
import { MessageStore } from "../storage/message_store.ts";
import { SimDisk } from "../storage/sim_disk.ts";
import type { FilePort } from "../storage/file_port.ts";
import { readWholeFile } from "../storage/file_port.ts";
import type { StoreConfig } from "../storage/config.ts";
import { PROPERTY_DELAY, SCHEDULE_TOPIC } from "../storage/message/message_const.ts";
import {
  LOOPBACK,
  seededRandom,
  smallStoreConfig,
  storeCore,
  testMessage,
} from "../storage/testing.ts";

const T0 = 1_700_000_000_000;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** The files each store was opened on: the schedule service keeps its offsets beside them. */
const filesOf = new WeakMap<MessageStore, FilePort>();

function newStore(files: FilePort, nowMs: () => number, patch: Partial<StoreConfig> = {}) {
  const store = new MessageStore({
    files,
    config: smallStoreConfig("/data", { messageDelayLevel: "1s", ...patch }),
    nowMs,
  });
  filesOf.set(store, files);
  return store;
}

/** A message produced with delay level 1 for topic T, queue 0 (as Broker.produce stores it). */
function delayed(body: string) {
  return testMessage(SCHEDULE_TOPIC, 0, enc.encode(body), {
    [PROPERTY_DELAY]: "1",
    REAL_TOPIC: "T",
    REAL_QID: "0",
  });
}

function schedule(store: MessageStore, nowMs: () => number, log: Logger = () => {}) {
  return new ScheduleService(store, {
    files: filesOf.get(store)!,
    dataDir: "/data",
    nowMs,
    log,
    storeHost: LOOPBACK,
    flushDelayOffsetIntervalMs: 60_000,
  });
}

function persistedOffset(files: FilePort): number | undefined {
  const bytes = readWholeFile(files, "/data/delayOffset.json");
  return bytes ? JSON.parse(dec.decode(bytes)).offsetTable["1"] : undefined;
}

function bodiesIn(store: MessageStore, topic: string): string[] {
  const got = store.getMessage(topic, 0, 0, { maxMsgNums: 32, maxBytes: 1 << 20 });
  return got.messages.map((m) => dec.decode(m.record.body));
}

/** The files of a process that was killed: nothing it does later reaches the disk. */
function severable(disk: SimDisk): { files: FilePort; sever: () => void } {
  let severed = false;
  const files = new Proxy(disk, {
    get(target, key) {
      if (severed) throw new Error("the process is gone");
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { files, sever: () => severed = true };
}

Deno.test("ScheduleService re-puts a due message whose put was refused, after a restart too", async () => {
  let now = T0;
  const disk = new SimDisk();
  const store = newStore(disk, () => now);
  await store.open();
  await store.putMessage(delayed("m0"));
  now = T0 + 1000; // due
  storeCore(store).gate.diskFull = true;
  const warnings: string[] = [];
  const first = schedule(store, () => now, (_level, msg) => warnings.push(msg));
  first.start(); // the pass tries the put now, and the store refuses it
  storeCore(store).gate.diskFull = false;
  await first.stop(); // persists once the refused pass has settled
  assert.deepEqual(warnings, ["delay level delivery failed; retrying"]);
  assert.deepEqual(bodiesIn(store, "T"), []);
  assert.equal(persistedOffset(disk), 0, "the refused message was skipped");
  assert.deepEqual(first.pending(), [1]);

  const second = schedule(store, () => now);
  second.start();
  await second.stop();
  assert.deepEqual(bodiesIn(store, "T"), ["m0"]);
  assert.equal(persistedOffset(disk), 1);
  await store.close();
});

Deno.test("ScheduleService never persists its offset past a re-put that is not yet durable (power loss)", async () => {
  let now = T0;
  const disk = new SimDisk();
  const { files, sever } = severable(disk);
  const store = newStore(files, () => now, { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  await store.putMessage(delayed("m0"));
  now = T0 + 1000; // due
  const before = schedule(store, () => now);
  before.start(); // the re-put to T is in flight: written and synced in a later turn
  await before.persist(); // the periodic persist comes first
  // Power loss now: the synced delayOffset.json survives, the re-put does not.
  disk.crash({ policy: "drop-unsynced", random: seededRandom(1) });
  sever();
  await before.stop().catch(() => {}); // its files are gone with the process

  const after = newStore(disk, () => now, { flushDiskType: "SYNC_FLUSH" });
  await after.open();
  assert.deepEqual(bodiesIn(after, "T"), [], "the re-put was not durable");
  assert.equal(persistedOffset(disk), 0, "persisted past a message not yet delivered");
  const restarted = schedule(after, () => now);
  restarted.start();
  await restarted.stop();
  assert.deepEqual(bodiesIn(after, "T"), ["m0"]);
  await after.close();
});

Deno.test("ScheduleService.stop() waits for re-puts in flight, so a clean restart repeats none", async () => {
  let now = T0;
  const disk = new SimDisk();
  const store = newStore(disk, () => now, { flushDiskType: "SYNC_FLUSH" });
  await store.open();
  await store.putMessage(delayed("m0"));
  await store.putMessage(delayed("m1"));
  now = T0 + 1000; // both due
  const before = schedule(store, () => now);
  before.start(); // both re-puts in flight
  await before.stop();
  assert.equal(persistedOffset(disk), 2);

  const after = schedule(store, () => now);
  after.start();
  await after.stop();
  assert.deepEqual(bodiesIn(store, "T"), ["m0", "m1"]);
  await store.close();
});
