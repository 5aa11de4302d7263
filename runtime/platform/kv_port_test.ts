// Platform.openKv() on whichever runtime runs the test (deno test: Deno.openKv; bun test: @deno/kv),
// against a local SQLite file and against a KV Connect host in this process.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { startKvHost } from "../../tools/kv_host/kv_connect_host.ts";
import { M_SET, VE_LE64 } from "../../tools/kv_host/memory_kv_store.ts";
import { type KvPort, KvPortError } from "./kv_port.ts";
import { pickPlatform } from "./pick.ts";

const platform = await pickPlatform();

// Deno.openKv takes the KV Connect token from the environment only (see kv_port.ts); keep
// one that another test in this process may have set.
process.env.DENO_KV_ACCESS_TOKEN ??= "kv-port-test-token";
const TOKEN = process.env.DENO_KV_ACCESS_TOKEN;
const bytes = (...b: number[]) => new Uint8Array(b);

async function checkPort(kv: KvPort): Promise<void> {
  assert.equal(await kv.get(["q", "a"]), null);
  const a = await kv.set(["q", "a"], bytes(1));
  const b = await kv.set(["q", "b"], bytes(2));
  await kv.set(["q"], bytes(0)); // the prefix itself is not listed
  await kv.set(["r", "x"], bytes(9));
  assert.ok(a.versionstamp < b.versionstamp);
  assert.deepEqual(await kv.get(["q", "a"]), {
    key: ["q", "a"],
    value: bytes(1),
    versionstamp: a.versionstamp,
  });

  const keys = async (options?: { limit?: number; reverse?: boolean }) =>
    (await kv.list(["q"], options)).map((e) => e.key.join("/"));
  assert.deepEqual(await keys(), ["q/a", "q/b"]);
  assert.deepEqual(await keys({ reverse: true }), ["q/b", "q/a"]);
  assert.deepEqual(await keys({ limit: 1 }), ["q/a"]);
  assert.deepEqual(await keys({ limit: 1, reverse: true }), ["q/b"]);

  const created = await kv.checkAndSet(["lease"], null, bytes(1));
  assert.ok(created.ok);
  assert.deepEqual(await kv.checkAndSet(["lease"], null, bytes(2)), { ok: false });
  const renewed = await kv.checkAndSet(["lease"], created.versionstamp, bytes(3));
  assert.ok(renewed.ok);
  assert.ok(renewed.versionstamp > created.versionstamp);
  assert.deepEqual(await kv.checkAndSet(["lease"], created.versionstamp, bytes(4)), { ok: false });
  assert.deepEqual((await kv.get(["lease"]))?.value, bytes(3));

  await kv.delete(["q", "a"]);
  assert.equal(await kv.get(["q", "a"]), null);
  assert.deepEqual(await keys(), ["q/b"]);
}

Deno.test("Platform.openKv() on a local SQLite file: get, set, list, delete, checkAndSet", async () => {
  const dir = mkdtempSync(`${tmpdir()}/kv-port-`);
  const kv = await platform.openKv(`${dir}/kv.sqlite`);
  try {
    await checkPort(kv);
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

Deno.test("Platform.openKv() on a KV Connect URL: get, set, list, delete, checkAndSet, expiry", async () => {
  let skewMs = 0;
  await using host = await startKvHost({
    serve: platform.serve,
    token: TOKEN,
    nowMs: () => Date.now() + skewMs,
  });
  const kv = await platform.openKv(host.url, { accessToken: TOKEN });
  try {
    await checkPort(kv);
    await kv.set(["ttl"], bytes(5), { expireInMs: 1000 });
    assert.deepEqual((await kv.get(["ttl"]))?.value, bytes(5));
    skewMs = 2000;
    assert.equal(await kv.get(["ttl"]), null);
  } finally {
    kv.close();
  }
});

Deno.test("KvPort.get() and list() refuse a value that is not a Uint8Array", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  // ["u64"] packed: string part 0x02, "u64", 0x00. A KvU64 as another program might write.
  const key = bytes(2, 0x75, 0x36, 0x34, 0);
  const value = { data: bytes(7, 0, 0, 0, 0, 0, 0, 0), encoding: VE_LE64 };
  host.store.commit([], [{ key, type: M_SET, value, expireAtMs: 0 }]);
  const kv = await platform.openKv(host.url, { accessToken: TOKEN });
  try {
    await assert.rejects(kv.get(["u64"]), (e: Error) => {
      assert.ok(e instanceof KvPortError);
      assert.match(
        e.message,
        /^Cannot read \["u64"\] in http:.*: the value is a \w+, not a Uint8Array/,
      );
      return true;
    });
    await assert.rejects(kv.list([]), KvPortError);
  } finally {
    kv.close();
  }
});

Deno.test("Platform.openKv() refuses a KV Connect token the runtime would not use", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const onDeno = platform.name === "deno";
  // Deno: the token differs from DENO_KV_ACCESS_TOKEN, so openKv() says so before opening.
  // Bun: @deno/kv sends it, and the host answers 401.
  await assert.rejects(
    platform.openKv(host.url, { accessToken: `${TOKEN}-wrong` }),
    onDeno ? /DENO_KV_ACCESS_TOKEN from the environment, which is a different token/ : /401/,
  );
});
