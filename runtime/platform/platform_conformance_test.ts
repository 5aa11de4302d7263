// One suite of Platform checks for every runtime. `deno test` runs them on Deno's platform;
// its last test runs this same file under `bun test` (tests/support/bun_deno_test_shim.ts
// maps Deno.test onto bun:test) and requires every check to pass on Bun's platform too.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import process from "node:process";
import { Buffer } from "node:buffer";
import { readFully } from "../../storage/file_port.ts";
import { SCHEMA_VERSION_LATEST } from "../../storage/metadata/migrations.ts";
import { openMetadataDb } from "../../storage/metadata/sqlite.ts";
import { ChildRun, REPO_ROOT, runtimeBinary } from "../../tests/harness/process.ts";
import { makeTestPki, pkiUnavailable, type TestPki } from "../../tests/harness/tls.ts";
import { pickPlatform } from "./pick.ts";

const platform = await pickPlatform();
const CHECKS: string[] = [];
const PREFIX = "Platform conformance:";

function check(name: string, fn: () => Promise<void> | void): void {
  CHECKS.push(name);
  Deno.test(`${PREFIX} ${name}`, fn);
}

async function withDir(body: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = mkdtempSync(`${tmpdir()}/platform-conformance-`);
  try {
    await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const utf8 = (text: string) => new TextEncoder().encode(text);

check("pickPlatform() picks the platform of the runtime it runs on", () => {
  const versions = process.versions as Record<string, string | undefined>;
  assert.equal(platform.name, versions.bun === undefined ? "deno" : "bun");
  assert.equal(platform.version, versions.bun ?? versions.deno);
});

check("bodyText() keeps UTF-8 text and refuses non-UTF-8 and U+FFFD (base64 on the wire)", () => {
  for (const text of ["", "hello", "héllo, wörld ✓ 😀", "\uFEFFstarts with a BOM"]) {
    assert.equal(platform.bodyText(utf8(text)), text, JSON.stringify(text));
  }
  const notText = [
    [0xff], // never in UTF-8
    [0xe2, 0x82], // truncated sequence
    [0xc0, 0xaf], // overlong "/"
    [0xed, 0xa0, 0x80], // a UTF-16 surrogate
    [...utf8("a\uFFFDb")], // valid UTF-8, but U+FFFD reads as damage: base64 (README)
    [...utf8("\uFFFD")],
  ];
  for (const bytes of notText) {
    assert.equal(platform.bodyText(new Uint8Array(bytes)), undefined, String(bytes));
  }
});

check("serve() answers on a free port, and close() lets a request in flight finish", async () => {
  let arrived!: () => void;
  const slowArrived = new Promise<void>((resolve) => (arrived = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = await platform.serve({
    hostname: "127.0.0.1",
    port: 0,
    connections: { headerTimeoutMs: 10_000, idleTimeoutMs: 10_000, connectionsMax: 16 },
    maxRequestBodyBytes: 1024,
  }, async (request) => {
    if (new URL(request.url).pathname !== "/slow") {
      return new Response(`${request.method} ${await request.text()}`);
    }
    arrived();
    await released;
    return new Response("late");
  });
  assert.ok(server.port > 0);
  const url = `http://127.0.0.1:${server.port}`;
  const answer = await fetch(`${url}/`, { method: "POST", body: "ping" });
  assert.equal(answer.status, 200);
  assert.equal(await answer.text(), "POST ping");

  const slow = fetch(`${url}/slow`).then((r) => r.text());
  await slowArrived;
  const closing = server.close();
  release();
  assert.equal(await slow, "late");
  await closing;
  await assert.rejects(fetch(`${url}/`).then((r) => r.text()));
});

check("listenTcp() accepts on a free port and hands over the socket", async () => {
  const server = await platform.listenTcp({ hostname: "127.0.0.1", port: 0 }, (socket) => {
    socket.on("data", (data) => socket.write(data));
    socket.on("end", () => socket.end());
  });
  assert.ok(server.port > 0);
  const client = net.connect(server.port, "127.0.0.1");
  const received: Uint8Array[] = [];
  client.on("data", (data: Uint8Array) => received.push(data));
  const ended = new Promise((resolve) => client.on("close", resolve));
  client.end(utf8("echo me"));
  await ended;
  assert.equal(Buffer.concat(received).toString("utf8"), "echo me");
  await server.close();
});

check("listenTcpConnections() echoes in order, flushes a large write, times out idle", async () => {
  let idleFired = false;
  const server = await platform.listenTcpConnections(
    { hostname: "127.0.0.1", port: 0 },
    (conn) => {
      conn.setNoDelay(true);
      conn.setTimeout(300, () => {
        idleFired = true;
        conn.destroy();
      });
      conn.on("data", (data) => {
        // A 1 MiB answer to the first byte "B": more than a socket takes at once.
        conn.write(data[0] === 66 ? new Uint8Array(1 << 20).fill(7) : data);
      });
    },
  );
  const client = net.connect(server.port, "127.0.0.1");
  let got = 0;
  const chunks: Uint8Array[] = [];
  client.on("data", (data: Uint8Array) => {
    got += data.length;
    if (got <= 7) chunks.push(data);
  });
  const closed = new Promise((resolve) => client.on("close", resolve));
  client.write(utf8("echo me"));
  while (got < 7) await new Promise((r) => setTimeout(r, 10));
  assert.equal(Buffer.concat(chunks).toString("utf8"), "echo me");
  client.write(utf8("B"));
  await closed; // closed by the idle timer once the megabyte is out
  assert.equal(got, 7 + (1 << 20));
  assert.ok(idleFired);
  await server.close();
});

check(
  "listenTcpConnections(): writableLength, drain after a large write, end(), pause",
  async () => {
    // What the lean gRPC transport relies on (functions/grpc/h2/writer.ts).
    const seen: { queued: number; drained: boolean; pausedGot: number } = {
      queued: 0,
      drained: false,
      pausedGot: 0,
    };
    let resumed!: () => void;
    const resumedNow = new Promise<void>((r) => resumed = r);
    const server = await platform.listenTcpConnections(
      { hostname: "127.0.0.1", port: 0 },
      (conn) => {
        let paused = false;
        conn.on("data", (data) => {
          if (paused) seen.pausedGot += data.length;
          if (data[0] !== 66) return;
          conn.pause!();
          paused = true;
          // 4 MiB answer: more than the socket takes at once, so some waits in writableLength.
          conn.write(new Uint8Array(4 << 20).fill(9));
          seen.queued = conn.writableLength ?? -1;
          conn.once!("drain", () => {
            seen.drained = true;
            conn.write(utf8("end")); // then end(): after what is queued, as node:net's
            conn.end();
          });
          setTimeout(() => {
            paused = false;
            conn.resume!();
            resumed();
          }, 100);
        });
      },
    );
    const client = net.connect(server.port, "127.0.0.1");
    client.pause(); // let the server's answer back up
    let got = 0;
    client.on("data", (data: Uint8Array) => got += data.length);
    const closed = new Promise((resolve) => client.on("close", resolve));
    client.write(utf8("B"));
    await new Promise((r) => setTimeout(r, 50));
    client.write(utf8("while paused")); // the server reads nothing until it resumes
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(seen.pausedGot, 0, "a paused connection delivers no data");
    client.resume();
    await resumedNow;
    await closed;
    assert.equal(got, (4 << 20) + 3, "end() sent everything queued before closing");
    assert.ok(seen.queued > 0, `writableLength counted what waited (${seen.queued})`);
    assert.ok(seen.drained, "drain was emitted once the queue emptied");
    await server.close();
  },
);

check(
  "files round-trip: write, read, sync, truncate, rename, list, remove",
  () =>
    withDir(async (dir) => {
      const { files } = platform;
      files.mkdirp(`${dir}/a/b`); // parents missing
      files.mkdirp(`${dir}/a/b`); // there already
      files.mkdirp(`${dir}/a/c`); // parent there
      assert.deepEqual(files.list(`${dir}/a`).sort(), ["b", "c"]);
      const file = files.open(`${dir}/a/b/one`, { create: true });
      assert.throws(() => files.mkdirp(`${dir}/a/b/one`), "a file is in the way");
      assert.throws(() => files.mkdirp(`${dir}/a/b/one/x`), "a file is in the way");
      file.writeAt(utf8("abc"), 0);
      file.writeAt(utf8("xyz"), 10); // leaves a hole of zeros
      await file.datasync();
      assert.equal(file.size(), 13);
      assert.deepEqual(
        readFully(file, 0, 13),
        new Uint8Array([97, 98, 99, ...Array(7).fill(0), 120, 121, 122]),
      );
      file.truncate(2);
      assert.deepEqual(readFully(file, 0, 13), utf8("ab"));
      file.close();
      files.rename(`${dir}/a/b/one`, `${dir}/a/b/two`);
      await files.syncDir(`${dir}/a/b`);
      assert.deepEqual(files.list(`${dir}/a/b`), ["two"]);
      assert.equal(files.exists(`${dir}/a/b/one`), false);
      assert.ok(Math.abs(files.modifiedMs(`${dir}/a/b/two`) - platform.clock.wallMs()) < 60_000);
      files.remove(`${dir}/a/b/two`);
      assert.deepEqual(files.list(`${dir}/a/b`), []);
      files.removeTree(`${dir}/a`);
      assert.equal(files.exists(`${dir}/a`), false);
    }),
);

check(
  "openFsSync() on Bun syncs the filesystem on a worker (syncfs), and refuses once closed",
  () =>
    withDir(async (dir) => {
      const { files } = platform;
      if (platform.name !== "bun") return assert.equal(files.openFsSync?.(dir), undefined);
      // libc's syncfs is looked up in the background when the platform is made.
      let fsSync = files.openFsSync!(dir);
      for (let i = 0; i < 100 && !fsSync; i++) {
        await new Promise((r) => setTimeout(r, 10));
        fsSync = files.openFsSync!(dir);
      }
      assert.ok(fsSync, "syncfs found in libc");
      const file = files.open(`${dir}/one`, { create: true });
      file.writeAt(utf8("abc"), 0);
      await fsSync.sync();
      file.close();
      fsSync.close();
      await assert.rejects(fsSync.sync(), /closed/);
      // deno-lint-ignore no-explicit-any
      const stats = (files as any).syncfs.stats;
      assert.ok(stats.onWorker >= 1, "the syncfs ran on a worker thread");
    }),
);

check(
  "openKv() on a local file: set, get, checkAndSet, list, delete",
  () =>
    withDir(async (dir) => {
      const kv = await platform.openKv(`${dir}/kv.sqlite`);
      try {
        const first = await kv.set(["k", "a"], utf8("1"));
        assert.deepEqual(await kv.get(["k", "a"]), {
          key: ["k", "a"],
          value: utf8("1"),
          versionstamp: first.versionstamp,
        });
        assert.deepEqual(await kv.checkAndSet(["k", "a"], null, utf8("2")), { ok: false });
        const second = await kv.checkAndSet(["k", "a"], first.versionstamp, utf8("3"));
        assert.ok(second.ok && second.versionstamp > first.versionstamp);
        assert.deepEqual((await kv.list(["k"])).map((e) => e.key), [["k", "a"]]);
        await kv.delete(["k", "a"]);
        assert.equal(await kv.get(["k", "a"]), null);
      } finally {
        kv.close();
      }
    }),
);

check(
  "openSqlite() runs statements, and the metadata database opens on it",
  () =>
    withDir(async (dir) => {
      const connection = await platform.openSqlite(":memory:");
      try {
        connection.exec("CREATE TABLE t (a INTEGER, b TEXT)");
        connection.run("INSERT INTO t VALUES (?, ?)", [7, "seven"]);
        assert.deepEqual(connection.rows("SELECT a, b FROM t", []), [[7, "seven"]]);
      } finally {
        connection.close();
      }
      using handle = await openMetadataDb(`${dir}/metadata.sqlite`, platform.openSqlite);
      assert.equal(handle.driver, "node:sqlite");
      assert.equal(handle.schemaVersion, SCHEMA_VERSION_LATEST);
    }),
);

check(
  "clock: monotonic time never goes back, wall time is now, timers fire and cancel",
  async () => {
    const { clock } = platform;
    const wallBefore = Date.now();
    const wall = clock.wallMs();
    assert.ok(wall >= wallBefore && wall <= Date.now());
    let last = clock.monotonicMs();
    for (let i = 0; i < 1000; i++) {
      const now = clock.monotonicMs();
      assert.ok(now >= last);
      last = now;
    }
    let cancelledFired = false;
    const cancel = clock.setTimer(1, () => (cancelledFired = true));
    cancel();
    const started = clock.monotonicMs();
    const firedAfterMs = await new Promise<number>((resolve) =>
      clock.setTimer(20, () => resolve(clock.monotonicMs() - started))
    );
    assert.ok(firedAfterMs >= 19, `fired after ${firedAfterMs} ms`); // timers round to 1 ms
    assert.equal(cancelledFired, false);
  },
);

check(
  "serve({ tls }) answers HTTPS only, direct and behind the guard; fetchTrusting(ca) trusts that CA and no other",
  async () => {
    const missing = pkiUnavailable();
    if (missing) return console.log(`TLS check skipped: ${missing}`);
    using pki = makeTestPki();
    using other = makeTestPki();
    const pem = (p: TestPki) => ({
      cert: readFileSync(p.certFile, "utf8"),
      key: readFileSync(p.keyFile, "utf8"),
    });
    const trusting = platform.fetchTrusting(readFileSync(pki.caFile, "utf8"));
    const guard = { headerTimeoutMs: 5000, idleTimeoutMs: 5000, connectionsMax: 10 };
    const refused = (p: Promise<Response>) =>
      p.then(async (r) => assert.fail(`answered ${r.status}: ${await r.text()}`), () => {});
    try {
      for (const connections of [undefined, guard]) {
        const server = await platform.serve({
          hostname: "127.0.0.1",
          port: 0,
          maxRequestBodyBytes: 1024,
          connections,
          tls: pem(pki),
        }, () => new Response("over tls"));
        try {
          const url = `https://127.0.0.1:${server.port}/`;
          assert.equal(await (await trusting(url)).text(), "over tls");
          await refused(fetch(url)); // the runtime's roots do not hold the test CA
          await refused(fetch(`http://127.0.0.1:${server.port}/`)); // no plain HTTP
        } finally {
          await server.close({ force: true });
        }
      }
      // A certificate from another CA is still refused: verification stays on.
      const stranger = await platform.serve({
        hostname: "127.0.0.1",
        port: 0,
        maxRequestBodyBytes: 1024,
        tls: pem(other),
      }, () => new Response("stranger"));
      try {
        await refused(trusting(`https://127.0.0.1:${stranger.port}/`));
      } finally {
        await stranger.close({ force: true });
      }
      if (platform.name === "bun") {
        // Bun's tls.ca replaces the roots, so fetchTrusting tries the CA alone first and
        // falls back to the roots as well (bun_fetch.ts): with `other`'s CA standing in for
        // a root, its server is reached on the fallback, and that origin stays on it.
        const { bunFetchTrusting } = await import("./bun_fetch.ts");
        const withRoot = bunFetchTrusting(readFileSync(pki.caFile, "utf8"), [
          readFileSync(other.caFile, "utf8"),
        ]);
        const rooted = await platform.serve({
          hostname: "127.0.0.1",
          port: 0,
          maxRequestBodyBytes: 1024,
          tls: pem(other),
        }, () => new Response("under a root"));
        try {
          const url = `https://127.0.0.1:${rooted.port}/`;
          assert.equal(
            await (await withRoot(url, { method: "POST", body: "x" })).text(),
            "under a root",
          );
          assert.equal(await (await withRoot(url)).text(), "under a root");
        } finally {
          await rooted.close({ force: true });
        }
      }
    } finally {
      trusting.close();
    }
  },
);

Deno.test({
  name: `${PREFIX} the same checks pass on Bun`,
  ignore: platform.name !== "deno",
  async fn() {
    const child = spawn(
      runtimeBinary("bun"),
      ["test", "--timeout", "20000", "./runtime/platform/platform_conformance_test.ts"],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    await using run = new ChildRun(child, "bun test platform_conformance_test.ts");
    const exit = await run.exited;
    const output = [...run.lines, ...run.stderr.join("").split("\n")].join("\n");
    const passed = [
      ...output.matchAll(/^\(pass\) Platform conformance: (.+?)(?: \[[\d.]+m?s\])?$/gm),
    ]
      .map((m) => m[1]);
    assert.deepEqual(passed.sort(), [...CHECKS].sort(), output);
    assert.equal(exit.code, 0, output);
  },
});
