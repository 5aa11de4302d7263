// KvPort over etcd (etcd_port.ts) against a real etcd process, and the key packing it
// relies on (kv_key_codec.ts) against Deno KV's own order. Skips, saying why, without etcd.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { ETCD_SKIP_REASON, startEtcd } from "../../tests/harness/etcd.ts";
import { ETCD_CALL_TIMEOUT_MS_DEFAULT, isEtcdUrl, parseEtcdUrl } from "./etcd_port.ts";
import { KvKeyCodecError, packKey, unpackKey } from "./kv_key_codec.ts";
import { type KvKey, KvPortError } from "./kv_port.ts";
import { pickPlatform } from "./pick.ts";

const platform = await pickPlatform();
const bytes = (...b: number[]) => new Uint8Array(b);

const KEYS: KvKey[] = [
  [bytes(0, 1)],
  [bytes(0xff)],
  ["", "a"],
  ["a"],
  ["a", "b"],
  ["a\u0000b"],
  ["ä"],
  [-(2n ** 70n)],
  [-300n],
  [-1n],
  [0n],
  [1n],
  [255n],
  [256n],
  [2n ** 64n],
  [-Infinity],
  [-1.5],
  [0],
  [1],
  [1e300],
  [false],
  [true],
  ["edgemq", "replica", "broker-a", 3],
];

const compareBytes = (a: Uint8Array, b: Uint8Array) => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
};

Deno.test("packKey() round-trips every key part type and orders keys as Deno KV does", async () => {
  for (const key of KEYS) assert.deepEqual(unpackKey(packKey(key)), key);
  // Deno KV's own order, from a local database of this runtime (Deno.openKv or @deno/kv).
  const dir = mkdtempSync(`${tmpdir()}/kv-codec-`);
  const kv = await platform.openKv(`${dir}/kv.sqlite`);
  try {
    for (const key of KEYS) await kv.set(["k", ...key], bytes(1));
    const denoOrder = (await kv.list(["k"])).map((e) => JSON.stringify(e.key, bigints));
    const packedOrder = [...KEYS].sort((a, b) => compareBytes(packKey(a), packKey(b)))
      .map((k) => JSON.stringify(["k", ...k], bigints));
    assert.deepEqual(packedOrder, denoOrder);
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
  // A prefix packs to a byte prefix; strings pack as Deno packs them.
  assert.deepEqual(packKey(["ab", "c"]), bytes(2, 0x61, 0x62, 0, 2, 0x63, 0));
  assert.throws(() => unpackKey(bytes(0x02, 0x61)), KvKeyCodecError);
  assert.throws(() => unpackKey(bytes(0x99)), KvKeyCodecError);
});

Deno.test("etcd:// URLs: endpoints, and a clear refusal of anything else", () => {
  assert.ok(isEtcdUrl("etcd://10.0.0.1:2379"));
  assert.ok(!isEtcdUrl("http://10.0.0.1:2379"));
  assert.deepEqual(parseEtcdUrl("etcd://10.0.0.1:2379,etcd-2:2379,[::1]:2379"), {
    hosts: ["http://10.0.0.1:2379", "http://etcd-2:2379", "http://[::1]:2379"],
    callTimeoutMs: ETCD_CALL_TIMEOUT_MS_DEFAULT,
  });
  assert.deepEqual(parseEtcdUrl("etcd://a:1?callTimeoutMs=1500"), {
    hosts: ["http://a:1"],
    callTimeoutMs: 1500,
  });
  for (
    const bad of [
      "etcd://",
      "etcd://host",
      "etcd://a:1,,b:2",
      "etcd://a:1/x",
      "etcd://a:1?callTimeoutMs=5",
      "etcd://a:1?callTimeoutMs=1.5e3",
      "etcd://a:1?timeout=100",
    ]
  ) {
    assert.throws(() => parseEtcdUrl(bad), KvPortError, bad);
  }
});

Deno.test({
  name: "Platform.openKv() on etcd://: get, set, list, delete, checkAndSet on mod_revision",
  ignore: ETCD_SKIP_REASON !== undefined,
  async fn() {
    await using etcd = await startEtcd();
    const kv = await platform.openKv(etcd.url);
    const other = await platform.openKv(etcd.url); // a second client sees the same store
    try {
      assert.equal(await kv.get(["q", "a"]), null);
      const a = await kv.set(["q", "a"], bytes(1));
      const b = await kv.set(["q", "b"], bytes(2));
      await kv.set(["q"], bytes(0)); // the prefix itself is not listed
      await kv.set(["r", "x"], bytes(9));
      await kv.set(["q", 7], bytes(3)); // numbers sort after strings, as in Deno KV
      assert.match(a.versionstamp, /^[0-9a-f]{20}$/);
      assert.ok(a.versionstamp < b.versionstamp);
      assert.deepEqual(await other.get(["q", "a"]), {
        key: ["q", "a"],
        value: bytes(1),
        versionstamp: a.versionstamp,
      });
      const keys = async (options?: { limit?: number; reverse?: boolean }) =>
        (await other.list(["q"], options)).map((e) => e.key.join("/"));
      assert.deepEqual(await keys(), ["q/a", "q/b", "q/7"]);
      assert.deepEqual(await keys({ reverse: true }), ["q/7", "q/b", "q/a"]);
      assert.deepEqual(await keys({ limit: 1 }), ["q/a"]);
      assert.deepEqual(await keys({ limit: 2, reverse: true }), ["q/7", "q/b"]);

      const created = await kv.checkAndSet(["lease"], null, bytes(1));
      assert.ok(created.ok);
      assert.deepEqual(await other.checkAndSet(["lease"], null, bytes(2)), { ok: false });
      const renewed = await other.checkAndSet(["lease"], created.versionstamp, bytes(3));
      assert.ok(renewed.ok);
      assert.ok(renewed.versionstamp > created.versionstamp);
      assert.equal((await kv.get(["lease"]))?.versionstamp, renewed.versionstamp);
      assert.deepEqual(await kv.checkAndSet(["lease"], created.versionstamp, bytes(4)), {
        ok: false,
      });
      assert.deepEqual(await kv.checkAndSet(["lease"], "not-a-stamp", bytes(4)), { ok: false });
      assert.deepEqual((await kv.get(["lease"]))?.value, bytes(3));
      // An unrelated write does not change the lease's versionstamp (mod_revision is per key).
      await kv.set(["unrelated"], bytes(5));
      assert.ok((await kv.checkAndSet(["lease"], renewed.versionstamp, bytes(6))).ok);

      await kv.delete(["q", "a"]);
      assert.equal(await kv.get(["q", "a"]), null);
      assert.deepEqual(await keys(), ["q/b", "q/7"]);
      // A deleted key can be created again with versionstamp null.
      await kv.delete(["lease"]);
      assert.ok((await kv.checkAndSet(["lease"], null, bytes(7))).ok);

      // expireInMs: an etcd lease on the key (TTL rounded up to whole seconds).
      await kv.set(["tmp"], bytes(1), { expireInMs: 1000 });
      assert.deepEqual((await kv.get(["tmp"]))?.value, bytes(1));
      const deadline = performance.now() + 10_000;
      while (await kv.get(["tmp"]) !== null) {
        assert.ok(performance.now() < deadline, "an expiring key outlived its lease");
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      kv.close();
      other.close();
    }
  },
});

function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? `${value}n` : value;
}
