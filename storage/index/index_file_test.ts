import assert from "node:assert/strict";
import { SimDisk } from "../sim_disk.ts";
import { StoreError } from "../errors.ts";
import type { DispatchRequest } from "../dispatch_request.ts";
import { IndexFile } from "./index_file.ts";
import {
  IndexError,
  indexFileBytes,
  indexKeyHash,
  type IndexLayout,
  topicKeyHash,
} from "./index_layout.ts";
import { indexFileName, IndexService, type IndexServiceOptions } from "./index_service.ts";

const T0 = 1_700_000_000_000; // a whole second, so entry times equal store times below
const ALL_TIME = { beginTimestamp: 0, endTimestamp: Number.MAX_SAFE_INTEGER };
const BASE = 2 ** 32 + 1000; // above 2^32: exercises both halves of each long

function record(offset: number, fields: Partial<DispatchRequest> = {}): DispatchRequest {
  return {
    topic: "T",
    queueId: 0,
    commitLogOffset: offset,
    msgSize: 100,
    tagsCode: 0,
    storeTimestamp: T0 + offset * 10, // record i at offset 100 i is stored at T0 + i s
    consumeQueueOffset: 0,
    keys: [],
    uniqKey: undefined,
    sysFlag: 0,
    ...fields,
  };
}

function service(disk: SimDisk, options: Partial<IndexServiceOptions> = {}): IndexService {
  const svc = new IndexService({
    files: disk,
    storePathRootDir: "/store",
    nowMs: () => new Date(2024, 0, 2, 3, 4, 5, 6).getTime(),
    hashSlotNum: 16,
    indexNum: 64,
    ...options,
  });
  svc.load();
  return svc;
}

/** What a query must return: entries with an equal keyHash, newest first. */
function expected(model: [string, number][], key: string, below = Infinity, max = 64) {
  const hash = indexKeyHash(`T#${key}`);
  return model.filter(([k, off]) => indexKeyHash(`T#${k}`) === hash && off < below)
    .map(([, off]) => off).reverse().slice(0, max);
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("topicKeyHash() equals indexKeyHash() of topic#key, MIN_VALUE and UTF-16 included", () => {
  const cases: [string, string][] = [
    ["T", "a"],
    ["", ""],
    ["%RETRY%g", "0A01C80711EB80000000010203048001"],
    ["主题", "键🔑"],
    // "T#" + these five UTF-16 units has String.hashCode MIN_VALUE, indexed as 0.
    ["T", String.fromCharCode(4227, 28, 8, 12, 12)],
  ];
  for (const [topic, key] of cases) {
    assert.equal(topicKeyHash(topic, key), indexKeyHash(`${topic}#${key}`), `${topic}#${key}`);
  }
  assert.equal(topicKeyHash("T", String.fromCharCode(4227, 28, 8, 12, 12)), 0);
});

Deno.test("indexKeyHash() is abs(String.hashCode) with MIN_VALUE as 0", () => {
  assert.equal(indexKeyHash("T#a"), 81906); // 84*31^2 + 35*31 + 97
  assert.equal(indexKeyHash("polygenelubricants"), 0); // hashCode() == Integer.MIN_VALUE
  assert.equal(indexKeyHash("hello world, index"), 530799462); // hashCode() == -530799462
});

Deno.test("IndexFile.flush() writes RocketMQ's exact header, slot and entry bytes", async (t) => {
  const disk = new SimDisk();
  const layout: IndexLayout = { hashSlotNum: 4, indexNum: 8 };
  const file = IndexFile.create(disk, "/f", layout, { phyOffset: 0, timestamp: 0 });
  // "T#a" 81906 and "T#e" 81910 share slot 2; "T#b" 81907 takes slot 3.
  const first = { commitLogOffset: BASE, msgSize: 50, storeTimestamp: T0 };
  const second = { commitLogOffset: BASE + 50, msgSize: 60, storeTimestamp: T0 + 2500 };
  file.putKey("T#a", first);
  file.putKey("T#e", first);
  file.putKey("T#a", second);
  file.putKey("T#b", second);
  await file.flush();
  await disk.syncDir("/");

  await t.step("bytes on the durable disk", () => {
    const want = new Uint8Array(indexFileBytes(layout));
    assert.equal(want.length, 40 + 4 * 4 + 8 * 20);
    const v = new DataView(want.buffer);
    v.setBigInt64(0, BigInt(T0)); // beginTimestamp
    v.setBigInt64(8, BigInt(T0 + 2500)); // endTimestamp: the last store time
    v.setBigInt64(16, BigInt(BASE)); // beginPhyOffset
    v.setBigInt64(24, BigInt(BASE + 110)); // endPhyOffset: just past the last record
    v.setInt32(32, 2); // hashSlotCount: slots 2 and 3
    v.setInt32(36, 5); // indexCount: four entries, numbered from 1
    v.setInt32(40 + 2 * 4, 3); // slot 2 -> entry 3
    v.setInt32(40 + 3 * 4, 4); // slot 3 -> entry 4
    const entries: [number, number, number, number][] = [
      [81906, BASE, 0, 0],
      [81910, BASE, 0, 1],
      [81906, BASE + 50, 2, 2], // 2.5 s after begin, truncated to 2
      [81907, BASE + 50, 2, 0],
    ];
    entries.forEach(([hash, phy, diff, prev], i) => {
      const at = 56 + 20 * (i + 1);
      v.setInt32(at, hash);
      v.setBigInt64(at + 4, BigInt(phy));
      v.setInt32(at + 12, diff);
      v.setInt32(at + 16, prev);
    });
    assert.deepEqual(disk.durableBytes("/f"), want);
  });

  await t.step("queries from memory and from disk agree", () => {
    const reopened = IndexFile.open(disk, "/f", layout, false);
    for (const f of [file, reopened]) {
      const select = (key: string, begin = 0) => {
        const out: number[] = [];
        f.selectPhyOffsets(out, indexKeyHash(key), 64, begin, Number.MAX_SAFE_INTEGER);
        return out;
      };
      assert.deepEqual(select("T#a"), [BASE + 50, BASE]);
      assert.deepEqual(select("T#e"), [BASE]);
      assert.deepEqual(select("T#b"), [BASE + 50]);
      assert.deepEqual(select("T#zz"), []);
      assert.deepEqual(select("T#a", T0 + 1000), [BASE + 50]);
    }
  });
});

Deno.test("IndexService.queryByKey() finds keys and unique ids despite collisions", async (t) => {
  const disk = new SimDisk();
  const svc = service(disk, { indexNum: 256 });
  const model: [string, number][] = [];
  for (let i = 0; i < 40; i++) {
    const keys = [`k${i % 7}`, i % 2 === 0 ? "Aa" : "BB"]; // "Aa" and "BB" share a hashCode
    svc.put(record(i * 100, { keys, uniqKey: `U${i}` }));
    for (const k of [`U${i}`, ...keys]) model.push([k, i * 100]);
  }
  const keys = [...new Set(model.map(([k]) => k))];
  const slots = new Set(keys.map((k) => indexKeyHash(`T#${k}`) % 16));
  assert.ok(slots.size < keys.length); // 48 keys in 16 slots: chains are shared

  await t.step("before and after flush, every key and id", async () => {
    for (const flush of [false, true]) {
      if (flush) await svc.flush();
      for (const k of keys) {
        assert.deepEqual(svc.queryByKey("T", k, { maxNum: 64, ...ALL_TIME }), expected(model, k));
      }
    }
  });
  await t.step("a hash collision is returned for the caller to re-check", () => {
    const aa = svc.queryByKey("T", "Aa", { maxNum: 64, ...ALL_TIME });
    assert.equal(aa.length, 40);
    assert.deepEqual(aa.slice(0, 2), [3900, 3800]);
  });
  await t.step("maxNum limits and clamps to 64, newest first", () => {
    assert.deepEqual(svc.queryByKey("T", "k3", { maxNum: 2, ...ALL_TIME }), [3800, 3100]);
    assert.equal(svc.queryByKey("T", "Aa", { maxNum: 30, ...ALL_TIME }).length, 30);
  });
  await t.step("bad input is a typed error", () => {
    const bad = [{ maxNum: 0, ...ALL_TIME }, { maxNum: 1, beginTimestamp: 5, endTimestamp: 4 }];
    for (const q of bad) {
      assert.throws(() => svc.queryByKey("T", "k1", q), (e) => e instanceof IndexError);
    }
    assert.throws(() => service(disk, { hashSlotNum: 0 }), (e) => e instanceof IndexError);
  });
  await svc.close();
});

Deno.test("IndexService.queryByKey() filters by time range across files", async () => {
  const disk = new SimDisk();
  const svc = service(disk, { indexNum: 8 }); // 7 entries a file
  for (let i = 0; i < 20; i++) svc.put(record(i * 100, { keys: ["k"] }));
  const query = (begin: number, end: number) =>
    svc.queryByKey("T", "k", { maxNum: 64, beginTimestamp: T0 + begin, endTimestamp: T0 + end });
  assert.deepEqual(query(3000, 6000), [600, 500, 400, 300]);
  assert.deepEqual(query(3001, 3999), []);
  assert.deepEqual(query(15_000, 99_000), [1900, 1800, 1700, 1600, 1500]);
  assert.deepEqual(query(-5000, 0), [0]);
  await svc.close();
});

Deno.test("IndexService.put() rolls across files; queries and reloads span them", async () => {
  const disk = new SimDisk();
  const svc = service(disk, { indexNum: 8 }); // 7 entries a file, same clock for every file
  const model: [string, number][] = [];
  for (let i = 0; i < 80; i++) {
    svc.put(record(i * 100, { keys: ["k", `k${i % 3}`] }));
    model.push(["k", i * 100], [`k${i % 3}`, i * 100]);
    if (i === 40) await svc.flush(); // the active file then takes more entries and slots
  }
  await svc.flush();
  const names = disk.list("/store/index");
  assert.equal(names.length, Math.ceil(160 / 7));
  assert.equal(names[0], "20240102030405006");
  assert.equal(names[1], "20240102030405007"); // same ms: one past the newest name
  assert.equal(names[0], indexFileName(new Date(2024, 0, 2, 3, 4, 5, 6).getTime()));
  const headers = svc.indexFiles().map((f) => f.header);
  for (let i = 1; i < headers.length; i++) {
    // A file begins with the record the previous one ended with, or the next (a record's
    // two keys may span two files).
    const previousEnd = headers[i - 1].endPhyOffset;
    assert.ok([previousEnd - 100, previousEnd].includes(headers[i].beginPhyOffset));
  }
  const check = (s: IndexService) => {
    for (const k of ["k", "k0", "k1", "k2"]) {
      assert.deepEqual(s.queryByKey("T", k, { maxNum: 100, ...ALL_TIME }), expected(model, k));
    }
  };
  check(svc);
  await svc.close();
  const reloaded = service(disk, { indexNum: 8 });
  check(reloaded);
  await reloaded.close();
});

Deno.test("IndexService.put() skips indexed offsets and ROLLBACK records", async () => {
  const disk = new SimDisk();
  const svc = service(disk, { indexNum: 8 });
  const records = Array.from({ length: 10 }, (_, i) => record(i * 100, { keys: ["k"] }));
  for (const r of records) svc.put(r);
  await svc.flush();
  const image = () => disk.list("/store/index").map((n) => disk.durableBytes(`/store/index/${n}`));
  const before = image();
  for (const r of records) svc.put(r);
  svc.put(records[9]);
  svc.put(record(1000, { keys: ["k"], sysFlag: 12 })); // ROLLBACK
  await svc.flush();
  assert.deepEqual(image(), before);
  svc.put(record(1100, { keys: ["k"], sysFlag: 4 })); // PREPARED is indexed
  assert.deepEqual(svc.queryByKey("T", "k", { maxNum: 3, ...ALL_TIME }), [1100, 900, 800]);
  await svc.close();
});

Deno.test("IndexService.recoverAfterCrash() keeps exactly the entries below the safe offset", async (t) => {
  for (let seed = 1; seed <= 200; seed++) {
    await t.step(`seed ${seed}`, async () => {
      const random = mulberry32(seed);
      const disk = new SimDisk();
      // 31 entries a file; 2 a record. Unsynced records sometimes stay in the flushed file
      // (torn slots and header there), sometimes roll into new ones (wholly beyond safe).
      const options = { indexNum: 32 };
      const svc = service(disk, options);
      const model: [string, number][] = [];
      const put = (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          svc.put(record(i * 100, { keys: [`k${i % 3}`], uniqKey: `U${i}` }));
          model.push([`U${i}`, i * 100], [`k${i % 3}`, i * 100]);
        }
      };
      const flushed = 1 + Math.floor(random() * 40);
      const total = flushed + 1 + Math.floor(random() * 12);
      const middle = flushed + Math.floor(random() * (total - flushed));
      put(0, flushed);
      await svc.flush();
      const safe = Math.floor(random() * (flushed + 1)) * 100;
      put(flushed, middle);
      svc.writeDirty(); // written but never synced: the crash keeps a torn prefix
      put(middle, total);
      svc.writeDirty();
      disk.crash({ policy: "torn-tail", random, keepUnsyncedNamesRatio: 0.5 });

      const recovered = service(disk, options);
      await recovered.recoverAfterCrash(safe);
      const keys = ["k0", "k1", "k2", ...Array.from({ length: total }, (_, i) => `U${i}`)];
      const check = (svcNow: IndexService, below: number, when: string) => {
        for (const k of keys) {
          const got = svcNow.queryByKey("T", k, { maxNum: 64, ...ALL_TIME });
          assert.deepEqual(got, expected(model, k, below), `key ${k} ${when}`);
        }
      };
      check(recovered, safe, "after recovery");
      await recovered.close();
      // The rebuilt slot table and header are on disk, not only in memory.
      const after = service(disk, options);
      check(after, safe, "after reload");
      // Re-dispatch from the start: indexed records are skipped, the rest indexed once.
      for (let i = 0; i < total; i++) {
        after.put(record(i * 100, { keys: [`k${i % 3}`], uniqKey: `U${i}` }));
      }
      check(after, Infinity, "after re-dispatch");
      await after.close();
    });
  }
});

Deno.test("IndexFile.recover() stops where a torn header counts entries never written", async (t) => {
  const layout: IndexLayout = { hashSlotNum: 4, indexNum: 16 };
  const setup = async (entry4: Uint8Array) => {
    const disk = new SimDisk();
    const file = IndexFile.create(disk, "/f", layout, { phyOffset: 0, timestamp: 0 });
    for (let i = 0; i < 3; i++) {
      file.putKey(`T#k${i + 1}`, {
        commitLogOffset: 1000 + 100 * i,
        msgSize: 100,
        storeTimestamp: T0,
      });
    }
    await file.flush();
    const handle = disk.open("/f");
    handle.writeAt(new Uint8Array([0, 0, 0, 9]), 36); // indexCount 9: eight entries claimed
    handle.writeAt(entry4, 56 + 4 * 20);
    return IndexFile.open(disk, "/f", layout, true);
  };
  const kept = (file: IndexFile) => {
    assert.equal(file.recover(Number.MAX_SAFE_INTEGER), 3);
    assert.equal(file.header.indexCount, 4);
    assert.equal(file.header.endPhyOffset, 1201);
  };
  // Zeros chain as slot 0 would ("T#k1".."T#k3" use slots 1-3), but go back in offset.
  await t.step("zeros: out of offset order", async () => kept(await setup(new Uint8Array(20))));
  await t.step("a stale entry: not chained as its slot was", async () => {
    const stale = new Uint8Array(20);
    const v = new DataView(stale.buffer);
    v.setInt32(0, indexKeyHash("T#k1")); // its slot holds entry 1, so prevIndex must be 1
    v.setBigInt64(4, 5000n);
    kept(await setup(stale));
  });
});

Deno.test("IndexService.deleteFilesBelow() deletes old files, never the last", async () => {
  const disk = new SimDisk();
  const svc = service(disk, { indexNum: 8 });
  for (let i = 0; i < 28; i++) svc.put(record(i * 100, { keys: ["k"] })); // 4 files of 7
  await svc.flush();
  const ends = svc.indexFiles().map((f) => f.header.endPhyOffset);
  assert.deepEqual(ends, [700, 1400, 2100, 2800]);
  assert.equal(await svc.deleteFilesBelow(1401), 2);
  assert.equal(disk.list("/store/index").length, 2);
  assert.deepEqual(svc.queryByKey("T", "k", { maxNum: 64, ...ALL_TIME }).at(-1), 1400);
  assert.equal(await svc.deleteFilesBelow(Number.MAX_SAFE_INTEGER), 1);
  assert.deepEqual(svc.indexFiles().map((f) => f.path), [
    `/store/index/${disk.list("/store/index")[0]}`,
  ]);
  svc.put(record(2800, { keys: ["k"] }));
  assert.deepEqual(svc.queryByKey("T", "k", { maxNum: 2, ...ALL_TIME }), [2800, 2700]);
  await svc.close();
});

Deno.test("IndexService.load() refuses a file larger than its layout", async () => {
  const disk = new SimDisk();
  const svc = service(disk);
  svc.put(record(0, { keys: ["k"] }));
  await svc.close();
  assert.throws(() => service(disk, { indexNum: 32 }), (e) => e instanceof IndexError);
});

Deno.test("IndexService.flush() refuses to go on after a failed fdatasync", async () => {
  const disk = new SimDisk();
  const svc = service(disk);
  svc.put(record(0, { keys: ["k"] }));
  disk.failDatasync(svc.indexFiles()[0].path);
  const notWritable = (e: unknown) => e instanceof StoreError && e.code === "STORE_NOT_WRITABLE";
  await assert.rejects(svc.flush(), notWritable);
  assert.throws(() => svc.put(record(100, { keys: ["k"] })), notWritable);
  await assert.rejects(svc.flush(), notWritable);
  await svc.close(); // closes the files without another flush
});

Deno.test("IndexService.flush() leaves the active file's slot table for close(); a start rebuilds it", async () => {
  const disk = new SimDisk();
  const svc = service(disk);
  const model: [string, number][] = [];
  for (let i = 0; i < 30; i++) {
    svc.put(record(i * 100, { keys: [`k${i % 4}`], uniqKey: `U${i}` }));
    model.push([`U${i}`, i * 100], [`k${i % 4}`, i * 100]);
  }
  await svc.flush();
  const [name] = disk.list("/store/index");
  const slotBytes = (bytes: Uint8Array | undefined) => bytes!.subarray(40, 40 + 16 * 4);
  // The checkpoint made entries and header durable, no slot page.
  assert.ok(slotBytes(disk.durableBytes(`/store/index/${name}`)).every((b) => b === 0));
  disk.crash({ policy: "drop-unsynced", random: mulberry32(7) });
  const recovered = service(disk);
  await recovered.recoverAfterCrash(Number.MAX_SAFE_INTEGER);
  for (const k of ["k0", "k1", "k2", "k3", "U0", "U29"]) {
    assert.deepEqual(recovered.queryByKey("T", k, { maxNum: 64, ...ALL_TIME }), expected(model, k));
  }
  await recovered.close();
  // close() wrote the slot table: a load without recovery reads it.
  assert.ok(slotBytes(disk.durableBytes(`/store/index/${name}`)).some((b) => b !== 0));
  const reloaded = service(disk);
  assert.deepEqual(
    reloaded.queryByKey("T", "k1", { maxNum: 64, ...ALL_TIME }),
    expected(model, "k1"),
  );
  await reloaded.close();
});
