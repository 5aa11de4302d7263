// ConsumeQueueStore.datasyncAll with an FsSync (Bun's syncfs): many queues to sync take one
// filesystem sync, never fewer guarantees than one fdatasync each (SimDisk's power cut).
import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { MessageStore } from "../message_store.ts";
import { seededRandom, smallStoreConfig, storeCore, testMessage } from "../testing.ts";

const enc = new TextEncoder();
const TOPICS = ["A", "B", "C"];
const QUEUES = [0, 1, 2, 3];

function newStore(disk: SimDisk, minQueues: number) {
  return new MessageStore({
    files: disk,
    config: smallStoreConfig("/data", {
      flushDiskType: "SYNC_FLUSH",
      consumeQueueFsSyncMinQueues: minQueues,
    }),
    nowMs: () => 1_700_000_000_000,
  });
}

/** Three messages in each of 12 queues; returns what each queue holds. */
async function fill(store: MessageStore): Promise<Map<string, string[]>> {
  const held = new Map<string, string[]>();
  for (let i = 0; i < 3; i++) {
    await Promise.all(TOPICS.flatMap((topic) =>
      QUEUES.map(async (q) => {
        const body = `${topic}${q}-${i}`;
        await store.putMessage(testMessage(topic, q, enc.encode(body)));
        held.set(`${topic}:${q}`, [...held.get(`${topic}:${q}`) ?? [], body]);
      })
    ));
  }
  return held;
}

/** After a power cut that keeps nothing unsynced, every queue holds every message. */
async function assertAfterPowerCut(disk: SimDisk, held: Map<string, string[]>, seed: number) {
  disk.crash({ policy: "torn-tail", random: seededRandom(seed) });
  const again = newStore(disk, 4);
  await again.open();
  for (const [key, bodies] of held) {
    const [topic, q] = key.split(":");
    const got = again.getMessage(topic, Number(q), 0, { maxMsgNums: 10, maxBytes: 1 << 20 });
    assert.deepEqual(
      got.messages.map((m) => new TextDecoder().decode(m.record.body)),
      bodies,
      `queue ${key} after the power cut`,
    );
  }
  await again.close();
}

Deno.test("a stop with many ConsumeQueues to sync takes one filesystem sync, and a power cut after it keeps every queue", async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const disk = new SimDisk({ fsSync: true });
    const store = newStore(disk, 4);
    await store.open();
    const held = await fill(store);
    const before = disk.stats.datasyncs;
    await store.close();
    assert.equal(disk.stats.fsSyncs >= 1, true, "the stop took a filesystem sync");
    // The 12 queues' files were not fdatasynced one by one (the index and checkpoint were).
    assert.ok(disk.stats.datasyncs - before < 12, `${disk.stats.datasyncs - before} fdatasyncs`);
    assert.equal(disk.exists(store.abortPath), false, "a clean stop");
    await assertAfterPowerCut(disk, held, seed);
  }
});

Deno.test("checkpoints while the store runs sync file by file; only a stop takes the filesystem sync", async () => {
  const disk = new SimDisk({ fsSync: true });
  const store = newStore(disk, 4);
  await store.open();
  await fill(store);
  const core = storeCore(store);
  // A full one while serving stays per file: syncfs beside produces cut their rate
  // several-fold (bench/README.md).
  await core.checkpoints.run();
  assert.equal(disk.stats.fsSyncs, 0);
  await fill(store);
  await store.close();
  assert.equal(disk.stats.fsSyncs, 1);
});

Deno.test("fewer ConsumeQueues than consumeQueueFsSyncMinQueues are synced file by file", async () => {
  const disk = new SimDisk({ fsSync: true });
  const store = newStore(disk, 100);
  await store.open();
  const held = await fill(store);
  await store.close();
  assert.equal(disk.stats.fsSyncs, 0);
  await assertAfterPowerCut(disk, held, 7);
});

Deno.test("a failed filesystem sync at stop leaves the store unclean, and a restart rebuilds every queue from the CommitLog", async () => {
  const disk = new SimDisk({ fsSync: true });
  const store = newStore(disk, 4);
  await store.open();
  const held = await fill(store);
  const core = storeCore(store);
  disk.failFsSync();
  await store.close();
  assert.equal(core.consumeQueues.fsSyncs, 1);
  assert.equal(disk.exists(store.abortPath), true, "the abort file stays: recovery runs");
  await assertAfterPowerCut(disk, held, 3);
});
