import assert from "node:assert/strict";
import { crc32 } from "node:zlib";
import fc from "fast-check";
import { SimDisk } from "../sim_disk.ts";
import { readWholeFile } from "../file_port.ts";
import { seededRandom } from "../testing.ts";
import {
  encodeEpochFile,
  type EpochEntry,
  EpochFile,
  findConsistentPoint,
  parseEpochFile,
} from "./epoch_file.ts";
import { ReplicaError } from "./replica_errors.ts";

const PATH = "/data/epochFileCheckpoint";
const text = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes ?? new Uint8Array(0));

function disk(): SimDisk {
  const d = new SimDisk();
  d.mkdirp("/data");
  return d;
}

Deno.test("EpochFile.append() writes RocketMQ's epochFileCheckpoint text and reopens it", async () => {
  const d = disk();
  const file = EpochFile.open(d, PATH);
  assert.equal(file.lastEpoch, 0);
  await file.append(1, 0);
  await file.append(2, 1048576);
  const lines = "1-0\n2-1048576\n";
  const crc = crc32(new TextEncoder().encode(lines)) & 0x7fffffff;
  assert.equal(text(readWholeFile(d, PATH)), `2\n${crc}\n${lines}`);
  const again = EpochFile.open(d, PATH);
  assert.deepEqual(again.entries, [{ epoch: 1, startOffset: 0 }, {
    epoch: 2,
    startOffset: 1048576,
  }]);
  assert.equal(again.lastEpoch, 2);
  assert.deepEqual(again.entryAt(5), { entry: { epoch: 1, startOffset: 0 }, endOffset: 1048576 });
  assert.deepEqual(again.entryAt(1048576), {
    entry: { epoch: 2, startOffset: 1048576 },
    endOffset: Infinity,
  });
  // Durable: the bytes survive a power cut with nothing unsynced kept.
  d.crash({ policy: "drop-unsynced", random: () => 0 });
  assert.equal(EpochFile.open(d, PATH).lastEpoch, 2);
});

Deno.test("EpochFile.append() refuses an epoch or start that does not follow the last", async () => {
  const file = EpochFile.open(disk(), PATH);
  await file.append(3, 100);
  for (const [epoch, start] of [[3, 200], [2, 200], [4, 99], [0, 300], [4, -1], [1.5, 300]]) {
    await assert.rejects(
      file.append(epoch, start),
      (e: unknown) => e instanceof ReplicaError && e.code === "EPOCH_ILLEGAL",
      `${epoch}-${start}`,
    );
  }
  await file.append(4, 100); // an equal start leaves epoch 3 empty: allowed
  assert.deepEqual(file.entries.map((e) => e.epoch), [3, 4]);
});

Deno.test("EpochFile.truncateFrom() drops entries starting at or after the offset; clipTo() keeps one starting at the end", async () => {
  const d = disk();
  const file = EpochFile.open(d, PATH);
  await file.append(1, 0);
  await file.append(2, 1000);
  await file.append(3, 2000);
  await file.clipTo(2000);
  assert.equal(file.lastEpoch, 3);
  await file.clipTo(1999);
  assert.equal(file.lastEpoch, 2);
  await file.truncateFrom(1000);
  assert.deepEqual(file.entries, [{ epoch: 1, startOffset: 0 }]);
  assert.deepEqual(EpochFile.open(d, PATH).entries, [{ epoch: 1, startOffset: 0 }]);
  await file.clear();
  assert.equal(EpochFile.open(d, PATH).entries.length, 0);
});

Deno.test("EpochFile.open() refuses a damaged file with EPOCH_FILE_CORRUPT", () => {
  const good = encodeEpochFile([{ epoch: 1, startOffset: 0 }, { epoch: 2, startOffset: 500 }]);
  const goodText = text(good);
  const cases: Record<string, string> = {
    "flipped digit": goodText.replace("2-500", "2-600"),
    "count too high": goodText.replace(/^2/, "3"),
    "no CRC line": "1\n",
    "not numbers": "x\ny\n",
    "incomplete last line": goodText.slice(0, -1),
    "epochs not rising": "",
  };
  const lines = "2-0\n1-500\n";
  cases["epochs not rising"] = `2\n${
    crc32(new TextEncoder().encode(lines)) & 0x7fffffff
  }\n${lines}`;
  assert.equal(parseEpochFile(good, PATH).length, 2);
  for (const [name, content] of Object.entries(cases)) {
    assert.throws(
      () => parseEpochFile(new TextEncoder().encode(content), PATH),
      (e: unknown) => e instanceof ReplicaError && e.code === "EPOCH_FILE_CORRUPT",
      name,
    );
  }
});

Deno.test("EpochFile writes are atomic: a power cut mid-write leaves the old or the new entries", async () => {
  const seen = new Set<string>();
  for (let seed = 1; seed <= 100; seed++) {
    const random = seededRandom(seed);
    const d = disk();
    const file = EpochFile.open(d, PATH);
    await file.append(1, 0);
    const writing = file.append(2, 4096).catch(() => {});
    for (let k = Math.floor(random() * 3); k > 0; k--) await Promise.resolve();
    d.crash({ policy: "torn-tail", random, keepUnsyncedNamesRatio: 0.5 });
    await writing;
    const epochs = EpochFile.open(d, PATH).entries.map((e) => e.epoch);
    assert.ok(
      JSON.stringify(epochs) === "[1]" || JSON.stringify(epochs) === "[1,2]",
      `seed ${seed}: ${epochs}`,
    );
    seen.add(JSON.stringify(epochs));
  }
  assert.equal(seen.size, 2, "power cuts landed both before and after the rename");
});

const e = (epoch: number, startOffset: number): EpochEntry => ({ epoch, startOffset });

Deno.test("findConsistentPoint() takes the highest shared epoch with equal start, at the lesser end", () => {
  const table: [string, EpochEntry[], number, EpochEntry[], number, number][] = [
    [
      "same history: the shorter log's end",
      [e(1, 0), e(2, 100)],
      300,
      [e(1, 0), e(2, 100)],
      250,
      250,
    ],
    ["slave ran ahead in an old epoch", [e(1, 0)], 1500, [e(1, 0), e(2, 1000)], 2000, 1000],
    [
      "two masters of different epochs",
      [e(1, 0), e(2, 1000)],
      1500,
      [e(1, 0), e(3, 1200)],
      2000,
      1000,
    ],
    [
      "same epoch, other start: not shared",
      [e(1, 0), e(2, 1000)],
      1500,
      [e(1, 0), e(2, 900)],
      2000,
      900,
    ],
    ["nothing shared", [e(1, 0)], 10, [e(2, 0)], 10, -1],
    ["one side empty", [], 0, [e(1, 0)], 10, -1],
    ["an empty last epoch", [e(1, 0), e(2, 700)], 700, [e(1, 0), e(2, 700)], 900, 700],
  ];
  for (const [name, mine, myMax, other, otherMax, want] of table) {
    assert.equal(findConsistentPoint(mine, myMax, other, otherMax), want, name);
  }
});

Deno.test("findConsistentPoint() is symmetric and never passes either end", () => {
  const history = fc.uniqueArray(fc.integer({ min: 1, max: 20 }), { maxLength: 6 }).chain((
    epochs,
  ) =>
    fc.tuple(
      fc.constant(epochs.sort((a, b) => a - b)),
      fc.array(fc.integer({ min: 0, max: 100 }), {
        minLength: epochs.length,
        maxLength: epochs.length,
      }),
      fc.integer({ min: 0, max: 100 }),
    ).map(([eps, gaps, tail]) => {
      let at = 0;
      const entries = eps.map((epoch, i) => ({ epoch, startOffset: at += gaps[i] }));
      return { entries, max: at + tail };
    })
  );
  fc.assert(fc.property(history, history, (a, b) => {
    const ab = findConsistentPoint(a.entries, a.max, b.entries, b.max);
    assert.equal(ab, findConsistentPoint(b.entries, b.max, a.entries, a.max));
    assert.ok(ab <= Math.min(a.max, b.max));
  }));
});
