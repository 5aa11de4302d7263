// The bundled entry files (scripts/bundle.ts): built from the current sources into a folder
// of their own under dist/, the broker bundle starts on Deno and on Bun, loads its lazily
// imported gRPC and remoting chunks (their addresses are in the listening line), stores and
// serves a message (the pull loads the chunk of the lazy route families), and stops cleanly; the functions bundle loads its whole module graph
// (without MQ_KV it stops with its own message, which runs only once every import is in).
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { STAMP_FILE } from "../runtime/bundle_stamp.ts";
import { bundle } from "../scripts/bundle.ts";
import { REPO_ROOT, RUNTIMES, startChild } from "./harness/process.ts";
import { tempDir } from "./harness/broker.ts";
import { MqClient } from "../client/mod.ts";

const OUT = `dist/test-bundle-${Deno.pid}`;

Deno.test({
  name: "bundle: the bundled broker and functions entries run on Deno and Bun",
  // esbuild's service process: stopped by bundle() itself.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    try {
      const files = await bundle(OUT);
      assert.ok(files.includes(`${OUT}/runtime/main.js`), files.join(", "));
      for (const runtime of RUNTIMES) {
        await t.step(`${runtime}: broker from the bundle`, async () => {
          const dataDir = tempDir(`bundle-${runtime}`);
          try {
            await using child = startChild(runtime, `${OUT}/runtime/main.js`, [], {
              PORT: "0",
              MQ_GRPC_PORT: "0",
              DATA_DIR: dataDir,
              MQ_LOG_LEVEL: "warn",
            });
            const listening = await child.waitForJson<
              { url: string; grpc?: string; remoting?: string }
            >("listening line", (v) => v.event === "listening", 60_000);
            assert.ok(listening.grpc, "the gRPC chunk loaded and bound");
            assert.ok(listening.remoting, "the remoting chunk loaded and bound");
            const client = new MqClient({ baseUrl: listening.url, retries: 0 });
            const sent = await client.produce("bundled", { body: "from the bundle" });
            const got = await client.pull("bundled", sent.queueId, {
              offset: sent.queueOffset,
              max: 1,
            });
            assert.equal(got.messages[0]?.messageId, sent.messageId);
            assert.equal(got.messages[0].body, "from the bundle");
            child.kill("SIGTERM");
            await child.exited;
            assert.ok(child.lines.some((l) => l.includes('"event":"stopped"')), "stopped cleanly");
          } finally {
            rmSync(dataDir, { recursive: true, force: true });
          }
        });
        await t.step(`${runtime}: functions from the bundle`, async () => {
          await using child = startChild(runtime, `${OUT}/functions/main.js`, [], { MQ_KV: "" });
          const { code } = await child.exited;
          assert.equal(code, 2);
          assert.match(child.stderr.join(""), /MQ_KV must name the KV Connect endpoint/);
        });
      }
      // The start files' rule (runtime/bundle_stamp.ts): a fresh bundle runs, a stale one
      // never does. The functions bundle is replaced by one that says so, which changes
      // nothing the stamp records; a stamped input that changes makes it stale.
      writeFileSync(
        `${REPO_ROOT}/${OUT}/functions/main.js`,
        'console.error("the bundle ran"); process.exit(3);\n',
      );
      writeFileSync(
        `${REPO_ROOT}/${OUT}/start_probe.ts`,
        `import { startEntry } from "../../runtime/bundle_stamp.ts";\n` +
          `await startEntry("functions/main.ts", ${JSON.stringify(OUT)});\n`,
      );
      for (const runtime of RUNTIMES) {
        await t.step(`${runtime}: the start path runs the fresh bundle`, async () => {
          await using child = startChild(runtime, `${OUT}/start_probe.ts`, [], { MQ_KV: "" });
          const { code } = await child.exited;
          assert.equal(code, 3, child.stderr.join(""));
          assert.match(child.stderr.join(""), /the bundle ran/);
        });
      }
      const stampPath = `${REPO_ROOT}/${OUT}/${STAMP_FILE}`;
      const stamp = JSON.parse(readFileSync(stampPath, "utf8"));
      stamp.inputs["functions/main.ts"][1] -= 1000; // as if main.ts changed after the build
      writeFileSync(stampPath, JSON.stringify(stamp));
      for (const runtime of RUNTIMES) {
        await t.step(`${runtime}: the start path runs the sources when stale`, async () => {
          await using child = startChild(runtime, `${OUT}/start_probe.ts`, [], { MQ_KV: "" });
          const { code } = await child.exited;
          const stderr = child.stderr.join("");
          assert.equal(code, 2, stderr);
          assert.match(stderr, /is stale, running the sources/);
          assert.match(stderr, /functions\/main\.ts changed/);
          assert.match(stderr, /MQ_KV must name the KV Connect endpoint/);
          assert.doesNotMatch(stderr, /the bundle ran/);
        });
      }
    } finally {
      rmSync(`${REPO_ROOT}/${OUT}`, { recursive: true, force: true });
    }
  },
});
