import assert from "node:assert/strict";
import {
  firstCommitVersion,
  KvMutationError,
  M_DELETE,
  M_MAX,
  M_MIN,
  M_SET,
  M_SUM,
  MemoryKvStore,
  type Mutation,
  type StoredEntry,
  toHex,
  VE_BYTES,
  VE_LE64,
} from "./memory_kv_store.ts";

const k = (...b: number[]) => new Uint8Array(b);
const set = (key: Uint8Array, data: number[], expireAtMs = 0): Mutation => ({
  key,
  type: M_SET,
  value: { data: new Uint8Array(data), encoding: VE_BYTES },
  expireAtMs,
});
const u64 = (type: number, key: Uint8Array, n: bigint): Mutation => {
  const data = new Uint8Array(8);
  new DataView(data.buffer).setBigUint64(0, n, true);
  return { key, type, value: { data, encoding: VE_LE64 }, expireAtMs: 0 };
};
const readU64 = (e: StoredEntry | undefined) =>
  new DataView(e!.data.buffer, e!.data.byteOffset).getBigUint64(0, true);
const keysOf = (entries: StoredEntry[]) => entries.map((e) => toHex(e.key));

function committed(result: ReturnType<MemoryKvStore["commit"]>): Uint8Array {
  assert.equal(result.status, "COMMITTED");
  return result.versionstamp;
}

Deno.test("MemoryKvStore.read() returns live keys in byte order, end exclusive, limited, reversible", () => {
  const store = new MemoryKvStore({ nowMs: () => 0 });
  // Inserted out of order; 0x01 0x00 sorts after 0x01 and before 0x02.
  committed(store.commit([], [set(k(2), [2]), set(k(1), [1]), set(k(1, 0), [10]), set(k(3), [3])]));
  const all = { start: k(), end: k(0xff), limit: 100, reverse: false };
  assert.deepEqual(keysOf(store.read(all)), ["01", "0100", "02", "03"]);
  assert.deepEqual(keysOf(store.read({ ...all, start: k(1, 0), end: k(3) })), ["0100", "02"]);
  assert.deepEqual(keysOf(store.read({ ...all, limit: 2 })), ["01", "0100"]);
  assert.deepEqual(keysOf(store.read({ ...all, limit: 2, reverse: true })), ["03", "02"]);
  assert.deepEqual(store.read({ ...all, start: k(3), end: k(3) }), []);
});

Deno.test("MemoryKvStore.commit() gives each commit one greater versionstamp", () => {
  const store = new MemoryKvStore({ nowMs: () => 0 });
  const first = committed(store.commit([], [set(k(1), [1]), set(k(2), [2])]));
  const second = committed(store.commit([], [set(k(1), [3])]));
  assert.equal(toHex(first), "00000000000000010000");
  assert.equal(toHex(second), "00000000000000020000");
  assert.equal(toHex(store.get(k(2))!.versionstamp), toHex(first));
  assert.equal(toHex(store.get(k(1))!.versionstamp), toHex(second));
});

Deno.test("MemoryKvStore started later never repeats a versionstamp of an earlier one", () => {
  // A restarted host: the first store made many commits in its millisecond, the next
  // starts one millisecond later, empty. A late compare-and-set expecting one of the
  // first store's versionstamps must not match anything in the second.
  let nowMs = 1_764_000_000_000;
  const before = new MemoryKvStore({ nowMs: () => nowMs });
  const old = new Set<string>();
  for (let i = 0; i < 1000; i++) old.add(toHex(committed(before.commit([], [set(k(1), [i])]))));
  nowMs += 1;
  const after = new MemoryKvStore({ nowMs: () => nowMs });
  const fresh = committed(after.commit([], [set(k(1), [0])]));
  assert.ok(!old.has(toHex(fresh)));
  assert.ok(toHex(fresh) > [...old].sort().at(-1)!, "later versions sort after earlier ones");
  const late = after.commit([{ key: k(1), versionstamp: before.get(k(1))!.versionstamp }], [
    set(k(1), [9]),
  ]);
  assert.deepEqual(late, { status: "CHECK_FAILED", failedChecks: [0] });
  assert.equal(firstCommitVersion(nowMs), BigInt(nowMs) * 1_000_000n);
});

Deno.test("MemoryKvStore.commit() reports every failed check and writes nothing", () => {
  const store = new MemoryKvStore({ nowMs: () => 0 });
  const vs = committed(store.commit([], [set(k(1), [1])]));
  const result = store.commit(
    [
      { key: k(1), versionstamp: vs }, // holds
      { key: k(1), versionstamp: new Uint8Array() }, // fails: the key exists
      { key: k(2), versionstamp: vs }, // fails: the key does not exist
      { key: k(3), versionstamp: new Uint8Array() }, // holds
    ],
    [set(k(1), [9]), set(k(3), [9])],
  );
  assert.deepEqual(result, { status: "CHECK_FAILED", failedChecks: [1, 2] });
  assert.deepEqual(store.get(k(1))!.data, k(1));
  assert.equal(store.get(k(3)), undefined);
});

Deno.test("MemoryKvStore.commit() leaves nothing behind when a later mutation fails", () => {
  const store = new MemoryKvStore({ nowMs: () => 0 });
  committed(store.commit([], [set(k(1), [1])]));
  const changes: string[][] = [];
  store.onChange((changed) => changes.push([...changed]));
  assert.throws(
    () => store.commit([], [set(k(2), [2]), u64(M_SUM, k(1), 1n)]),
    new KvMutationError("Cannot sum: the stored value is not a KvU64"),
  );
  assert.equal(store.get(k(2)), undefined);
  assert.deepEqual(changes, []);
  assert.equal(store.size, 1);
});

Deno.test("MemoryKvStore.commit() sums (wrapping at 2^64), mins and maxes KvU64 values", () => {
  const store = new MemoryKvStore({ nowMs: () => 0 });
  committed(store.commit([], [u64(M_SUM, k(1), 5n), u64(M_SUM, k(1), 7n)]));
  assert.equal(readU64(store.get(k(1))), 12n, "a missing key takes the operand");
  committed(store.commit([], [u64(M_SET, k(2), 2n ** 64n - 1n), u64(M_SUM, k(2), 3n)]));
  assert.equal(readU64(store.get(k(2))), 2n);
  committed(store.commit([], [u64(M_MIN, k(1), 4n), u64(M_MAX, k(2), 40n)]));
  assert.equal(readU64(store.get(k(1))), 4n);
  assert.equal(readU64(store.get(k(2))), 40n);
  assert.throws(() => store.commit([], [{ ...set(k(1), [1]), type: M_MAX }]), KvMutationError);
});

Deno.test("MemoryKvStore hides an expired entry after expiryLagMs, for reads and checks", () => {
  let nowMs = 1000;
  const store = new MemoryKvStore({ nowMs: () => nowMs, expiryLagMs: 500 });
  const vs = committed(store.commit([], [set(k(1), [1], 2000), set(k(2), [2])]));
  nowMs = 2400; // expired 400 ms ago: still visible, as on real backends
  assert.deepEqual(store.get(k(1))?.data, k(1));
  assert.equal(store.commit([{ key: k(1), versionstamp: vs }], []).status, "COMMITTED");
  nowMs = 2500;
  const all = { start: k(), end: k(0xff), limit: 10, reverse: false };
  assert.deepEqual(keysOf(store.read(all)), ["02"]);
  assert.equal(store.get(k(1)), undefined);
  assert.equal(store.size, 1, "dropped when touched");
  assert.equal(
    store.commit([{ key: k(1), versionstamp: new Uint8Array() }], []).status,
    "COMMITTED",
  );
});

Deno.test("MemoryKvStore.onChange() reports the keys of each commit until unsubscribed", () => {
  const store = new MemoryKvStore({ nowMs: () => 0 });
  const seen: string[][] = [];
  const off = store.onChange((changed) => seen.push([...changed].sort()));
  committed(store.commit([], [set(k(2), [2]), set(k(1), [1])]));
  committed(store.commit([], [{ key: k(2), type: M_DELETE, value: null, expireAtMs: 0 }]));
  store.commit([{ key: k(9), versionstamp: k(0, 0, 0, 0, 0, 0, 0, 1, 0, 0) }], [set(k(3), [3])]);
  off();
  committed(store.commit([], [set(k(4), [4])]));
  assert.deepEqual(seen, [["01", "02"], ["02"]]);
  assert.equal(store.watcherCount, 0);
});
