// tools/kv_host/kv_connect_host.ts against the real clients. The host runs in this process
// and is used through this runtime's own KV client (deno test: Deno.serve + Deno.openKv;
// bun test: Bun.serve + @deno/kv); a child on the other runtime proves the two clients
// share data through it, and tools/kv_host/main.ts runs as a child on the other runtime so each
// client also meets the other runtime's server. Limits are checked with raw requests,
// because Deno's client refuses oversize writes before sending them.
import assert from "node:assert/strict";
import process from "node:process";
import { type RuntimeName, startChild } from "../harness/process.ts";
import { startKvHost } from "../../tools/kv_host/kv_connect_host.ts";
import {
  M_SET,
  M_SET_SUFFIX_VERSIONSTAMPED_KEY,
  VE_BYTES,
} from "../../tools/kv_host/memory_kv_store.ts";
import { ProtoWriter } from "../../tools/kv_host/protobuf.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";

const platform = await pickPlatform();
const HERE: RuntimeName = platform.name;
const OTHER: RuntimeName = HERE === "deno" ? "bun" : "deno";

// Deno.openKv reads the token from the environment, which tests in other files running in
// this process may also use: adopt one that is already set rather than overwrite it.
process.env.DENO_KV_ACCESS_TOKEN ??= "kv-connect-host-test-token";
const TOKEN = process.env.DENO_KV_ACCESS_TOKEN;

/** This runtime's KV client: Deno.openKv, or @deno/kv typed as Deno.Kv (the same API). */
async function openClient(url: string): Promise<Deno.Kv> {
  const deno = (globalThis as { Deno?: { openKv?: (url: string) => Promise<Deno.Kv> } }).Deno;
  if (typeof deno?.openKv === "function") return await deno.openKv(url);
  const { openKv, makeLimitedV8Serializer } = await import("@deno/kv");
  const kv = await openKv(url, { accessToken: TOKEN, ...makeLimitedV8Serializer() });
  return kv as unknown as Deno.Kv;
}

async function u64(n: bigint): Promise<Deno.KvU64> {
  const deno = (globalThis as { Deno?: { KvU64?: typeof Deno.KvU64 } }).Deno;
  if (typeof deno?.KvU64 === "function") return new deno.KvU64(n);
  const { KvU64 } = await import("@deno/kv");
  return new KvU64(n) as unknown as Deno.KvU64;
}

const bytes = (...b: number[]) => new Uint8Array(b);

Deno.test("startKvHost() serves set, get, list, delete and sum/min/max to this runtime's client", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const kv = await openClient(host.url);
  try {
    const a = await kv.set(["t", "a"], bytes(1));
    const b = await kv.set(["t", "b"], bytes(2, 2));
    const c = await kv.set(["t", "c"], bytes(3, 3, 3));
    assert.match(a.versionstamp, /^[0-9a-f]{20}$/);
    assert.ok(a.versionstamp < b.versionstamp && b.versionstamp < c.versionstamp);

    const got = await kv.get<Uint8Array>(["t", "b"]);
    assert.deepEqual(got.value, bytes(2, 2));
    assert.equal(got.versionstamp, b.versionstamp);
    assert.deepEqual(await kv.get(["t", "missing"]), {
      key: ["t", "missing"],
      value: null,
      versionstamp: null,
    });

    const keys = async (options: Deno.KvListOptions) =>
      (await Array.fromAsync(kv.list({ prefix: ["t"] }, options))).map((e) => e.key.join("/"));
    assert.deepEqual(await keys({}), ["t/a", "t/b", "t/c"]);
    assert.deepEqual(await keys({ reverse: true }), ["t/c", "t/b", "t/a"]);
    assert.deepEqual(await keys({ limit: 2 }), ["t/a", "t/b"]);
    assert.deepEqual(await keys({ batchSize: 1 }), ["t/a", "t/b", "t/c"]);

    await kv.delete(["t", "b"]);
    assert.deepEqual(await keys({}), ["t/a", "t/c"]);

    const sum = await kv.atomic().sum(["n"], 5n).sum(["n"], 7n).min(["lo"], 9n).max(["hi"], 9n)
      .commit();
    assert.ok(sum.ok);
    await kv.atomic().min(["lo"], 4n).max(["hi"], 4n).commit();
    assert.equal((await kv.get<Deno.KvU64>(["n"])).value?.value, 12n);
    assert.equal((await kv.get<Deno.KvU64>(["lo"])).value?.value, 4n);
    assert.equal((await kv.get<Deno.KvU64>(["hi"])).value?.value, 9n);
    await kv.set(["n"], await u64(2n ** 64n - 1n));
    await kv.atomic().sum(["n"], 2n).commit();
    assert.equal((await kv.get<Deno.KvU64>(["n"])).value?.value, 1n, "sum wraps at 2^64");
  } finally {
    kv.close();
  }
});

Deno.test("startKvHost() applies an atomic write only when every check holds", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const kv = await openClient(host.url);
  try {
    const first = await kv.set(["lease"], bytes(1));
    const second = await kv.set(["lease"], bytes(2));

    // A stale versionstamp, and "must not exist" on a key that exists, both fail...
    const stale = await kv.atomic().check({ key: ["lease"], versionstamp: first.versionstamp })
      .set(["lease"], bytes(9)).set(["other"], bytes(9)).commit();
    assert.deepEqual(stale, { ok: false });
    const absent = await kv.atomic().check({ key: ["lease"], versionstamp: null })
      .set(["lease"], bytes(9)).commit();
    assert.deepEqual(absent, { ok: false });
    // ...and write nothing, not even the unchecked key.
    assert.deepEqual((await kv.get(["lease"])).value, bytes(2));
    assert.equal((await kv.get(["other"])).versionstamp, null);

    const won = await kv.atomic().check({ key: ["lease"], versionstamp: second.versionstamp })
      .check({ key: ["fresh"], versionstamp: null })
      .set(["lease"], bytes(3)).set(["fresh"], bytes(4)).commit();
    assert.ok(won.ok);
    assert.ok(won.versionstamp > second.versionstamp);
    const lease = await kv.get(["lease"]);
    const fresh = await kv.get(["fresh"]);
    assert.deepEqual(lease.value, bytes(3));
    assert.equal(lease.versionstamp, won.versionstamp, "one versionstamp per commit");
    assert.equal(fresh.versionstamp, won.versionstamp);
  } finally {
    kv.close();
  }
});

Deno.test("startKvHost() hides a value once its expireIn has passed on the host's clock", async () => {
  let skewMs = 0;
  await using host = await startKvHost({
    serve: platform.serve,
    token: TOKEN,
    nowMs: () => Date.now() + skewMs,
  });
  const kv = await openClient(host.url);
  try {
    await kv.set(["session"], bytes(1), { expireIn: 60_000 });
    await kv.set(["forever"], bytes(2));
    assert.deepEqual((await kv.get(["session"])).value, bytes(1));
    skewMs = 61_000;
    assert.equal((await kv.get(["session"])).versionstamp, null);
    assert.deepEqual((await kv.get(["forever"])).value, bytes(2));
    const ok = await kv.atomic().check({ key: ["session"], versionstamp: null })
      .set(["session"], bytes(3)).commit();
    assert.ok(ok.ok, "an expired key counts as absent for checks");
  } finally {
    kv.close();
  }
});

Deno.test("startKvHost() watch sends the current values, then each write and delete", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const kv = await openClient(host.url);
  const reader = kv.watch([["w", "x"], ["w", "y"]]).getReader();
  try {
    await kv.set(["w", "y"], bytes(7)); // may land before or after the first frame
    let frame = (await reader.read()).value!;
    if (frame[1].value === null) frame = (await reader.read()).value!;
    assert.equal(frame[0].value, null);
    assert.deepEqual(frame[1].value, bytes(7));

    const x = await kv.set(["w", "x"], bytes(1));
    frame = (await reader.read()).value!;
    assert.deepEqual(frame[0].value, bytes(1));
    assert.equal(frame[0].versionstamp, x.versionstamp);
    assert.deepEqual(frame[1].value, bytes(7), "the unchanged key keeps its value");

    await kv.delete(["w", "y"]);
    frame = (await reader.read()).value!;
    assert.equal(frame[1].value, null);
    assert.equal(frame[1].versionstamp, null);
    assert.equal(host.store.watcherCount, 1);
  } finally {
    await reader.cancel();
    kv.close();
  }
});

Deno.test("startKvHost() refuses a wrong token, enqueue, versionstamped keys and oversize requests", async (t) => {
  const internalErrors: unknown[] = [];
  await using host = await startKvHost({
    serve: platform.serve,
    token: TOKEN,
    onError: (e) => internalErrors.push(e),
  });
  const post = (path: string, body: Uint8Array<ArrayBuffer> | string, headers = {}) =>
    fetch(`${host.url}${path}`, {
      method: "POST",
      body,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "x-denokv-version": "3",
        "x-denokv-database-id": host.databaseId,
        ...headers,
      },
    });
  /** Asserts a 200 and returns the body. */
  const ok = async (response: Promise<Response>) => {
    const r = await response;
    const body = new Uint8Array(await r.arrayBuffer());
    assert.equal(r.status, 200, new TextDecoder().decode(body));
    return body;
  };
  const refused = async (response: Promise<Response>, status: number, text: RegExp | string) => {
    const r = await response;
    const body = await r.text();
    assert.equal(r.status, status, body);
    assert.equal(r.headers.get("content-type"), "text/plain");
    if (typeof text === "string") assert.equal(body, text);
    else assert.match(body, text);
  };
  const message = (...fields: [number, ProtoWriter][]) => {
    const w = new ProtoWriter();
    for (const [n, m] of fields) w.message(n, m);
    return w.finish();
  };
  const check = (key: Uint8Array): [number, ProtoWriter] => [1, new ProtoWriter().bytes(1, key)];
  const set = (key: Uint8Array, value: Uint8Array, type = M_SET): [number, ProtoWriter] => [
    2,
    new ProtoWriter().bytes(1, key)
      .message(2, new ProtoWriter().bytes(1, value).uint(2, VE_BYTES))
      .uint(3, type),
  ];
  const range = (limit: number): [number, ProtoWriter] => [
    1,
    new ProtoWriter().bytes(1, bytes(1)).bytes(2, bytes(2)).uint(3, limit),
  ];
  const atomicWrite = (...fields: [number, ProtoWriter][]) =>
    post("/kv/atomic_write", message(...fields));
  /** A packed key of exactly `n` bytes: one string part (0x02, text, 0x00). */
  const keyOf = (n: number) => new Uint8Array([2, ...new Array(n - 2).fill(0x61), 0]);
  // AtomicWriteOutput: field 1 = 1 (AW_SUCCESS), field 2 = a 10-byte versionstamp.
  const committed = (body: Uint8Array) =>
    assert.deepEqual([...body.subarray(0, 4)], [8, 1, 18, 10]);

  await t.step("metadata exchange and data path need the bearer token", async () => {
    await refused(post("/", "{}", { authorization: "Bearer nope" }), 401, /bearer token/);
    await refused(post("/kv/snapshot_read", new Uint8Array(), { authorization: "" }), 401, /token/);
    await refused(fetch(host.url, { headers: { authorization: `Bearer ${TOKEN}` } }), 405, /POST/);
    const meta = await post("/", JSON.stringify({ supportedVersions: [1, 2, 3] }));
    assert.equal(meta.headers.get("content-type"), "application/json");
    const body = await meta.json();
    assert.equal(body.version, 3);
    assert.equal(body.databaseId, host.databaseId);
    assert.equal(body.token, TOKEN);
    assert.deepEqual(body.endpoints, [{ url: "/kv", consistency: "strong" }]);
    const v1 = await (await post("/", "")).json();
    assert.equal(v1.version, 1);
    assert.deepEqual(v1.endpoints, [{ url: `${host.url}/kv`, consistency: "strong" }]);
    await refused(post("/", JSON.stringify({ supportedVersions: [4] })), 400, /No common/);
  });

  await t.step("a data-path request for another database is refused", async () => {
    const other = { "x-denokv-database-id": crypto.randomUUID() };
    await refused(post("/kv/snapshot_read", new Uint8Array(), other), 400, /Unknown database/);
  });

  await t.step("100 checks pass, 101 do not", async () => {
    const checks = (n: number) => Array.from({ length: n }, (_, i) => check(keyOf(3 + i)));
    committed(await ok(atomicWrite(...checks(100))));
    await refused(atomicWrite(...checks(101)), 400, "Too many checks: 101 > 100");
  });

  await t.step("1000 mutations pass, 1001 do not", async () => {
    const sets = (n: number) => Array.from({ length: n }, (_, i) => set(keyOf(8), bytes(i & 255)));
    committed(await ok(atomicWrite(...sets(1000))));
    assert.deepEqual(host.store.get(keyOf(8))?.data, bytes(999 & 255), "mutations apply in order");
    await refused(atomicWrite(...sets(1001)), 400, "Too many mutations: 1001 > 1000");
  });

  await t.step("a 2048-byte key passes, 2049 does not; an empty key does not", async () => {
    committed(await ok(atomicWrite(set(keyOf(2048), bytes(1)))));
    await refused(
      atomicWrite(set(keyOf(2049), bytes(1))),
      400,
      "Mutation key too large: 2049 > 2048 bytes",
    );
    await refused(atomicWrite(check(keyOf(2049))), 400, "Check key too large: 2049 > 2048 bytes");
    await refused(atomicWrite(set(new Uint8Array(), bytes(1))), 400, "Mutation key is empty");
  });

  await t.step("a 65536-byte value passes, 65537 does not", async () => {
    committed(await ok(atomicWrite(set(keyOf(4), new Uint8Array(65536)))));
    await refused(
      atomicWrite(set(keyOf(4), new Uint8Array(65537))),
      400,
      "Value too large: 65537 > 65536 bytes",
    );
  });

  await t.step("enqueue and versionstamped keys are refused, and nothing is written", async () => {
    const enqueue: [number, ProtoWriter] = [3, new ProtoWriter().bytes(1, bytes(1, 2, 3))];
    await refused(atomicWrite(set(keyOf(5), bytes(1)), enqueue), 400, /^Enqueue is not supported/);
    await refused(
      atomicWrite(
        set(keyOf(5), bytes(1)),
        set(keyOf(6), bytes(1), M_SET_SUFFIX_VERSIONSTAMPED_KEY),
      ),
      400,
      /^Versionstamped keys are not supported/,
    );
    assert.equal(host.store.get(keyOf(5)), undefined);
  });

  await t.step("over 10 read ranges or 1000 entries, and bad protobuf, are refused", async () => {
    await ok(post("/kv/snapshot_read", message(...new Array(10).fill(range(100)))));
    await refused(
      post("/kv/snapshot_read", message(...new Array(11).fill(range(1)))),
      400,
      "Too many read ranges: 11 > 10",
    );
    await refused(
      post("/kv/snapshot_read", message(range(1001))),
      400,
      "Too many entries requested: 1001 > 1000",
    );
    await refused(post("/kv/atomic_write", bytes(0x0a, 0x05, 1)), 400, /runs past the end/);
  });

  assert.deepEqual(internalErrors, []);
});

Deno.test(`a ${HERE} and a ${OTHER} client share data through startKvHost() in both directions`, async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const kv = await openClient(host.url);
  try {
    const mine = await kv.set(["interop", HERE], bytes(0xde, 0xad));
    await using child = startChild(OTHER, "tests/support/kv_interop_child.ts", [
      host.url,
      JSON.stringify(["interop", OTHER]),
      "beef",
      JSON.stringify(["interop", HERE]),
    ]);
    const out = await child.waitForJson<ChildOutput>("child output", (v) => "runtime" in v);
    assert.deepEqual(await child.exited, { code: 0, signal: null });
    assert.equal(out.runtime, OTHER);
    assert.deepEqual(out.read, { valueHex: "dead", versionstamp: mine.versionstamp });
    const theirs = await kv.get(["interop", OTHER]);
    assert.deepEqual(theirs.value, bytes(0xbe, 0xef));
    assert.equal(theirs.versionstamp, out.wrote);
    assert.ok(out.wrote! > mine.versionstamp);
  } finally {
    kv.close();
  }
});

interface ChildOutput {
  runtime: RuntimeName;
  wrote: string | null;
  read: { valueHex: string; versionstamp: string } | null;
}

Deno.test(`kv_host_main.ts on ${OTHER} prints its URL, serves this runtime's client and exits 0 on SIGTERM`, async () => {
  await using hostProcess = startChild(OTHER, "tools/kv_host/main.ts", [], {
    DENO_KV_ACCESS_TOKEN: TOKEN,
  });
  const { url } = await hostProcess.waitForJson<{ url: string }>("host URL", (v) => "url" in v);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const kv = await openClient(url);
  try {
    const set = await kv.set(["main"], bytes(42));
    assert.deepEqual(await kv.get(["main"]), {
      key: ["main"],
      value: bytes(42),
      versionstamp: set.versionstamp,
    });
    const reader = kv.watch([["main"]]).getReader();
    assert.deepEqual((await reader.read()).value?.[0].value, bytes(42));
    await kv.set(["main"], bytes(43));
    assert.deepEqual((await reader.read()).value?.[0].value, bytes(43));
    await reader.cancel();
  } finally {
    kv.close();
  }
  hostProcess.kill("SIGTERM");
  const exit = await hostProcess.exited;
  // Deno's node:child_process reports a signal exit for any child it signalled, even one
  // that exits 0, so there the clean stop shows in the last line only.
  if (HERE === "bun") assert.deepEqual(exit, { code: 0, signal: null });
  assert.deepEqual(hostProcess.lines.slice(1), ['{"stopped":true}']);
  assert.deepEqual(hostProcess.stderr, []);
});
