// The bundled entry files (scripts/bundle.ts): built from the current sources into a folder
// of their own under dist/, the broker bundle starts on Deno and on Bun, loads its lazily
// imported gRPC and remoting chunks (their addresses are in the listening line), stores and
// serves a message (the pull loads the chunk of the lazy route families), and stops cleanly; the functions bundle loads its whole module graph
// (without MQ_KV it stops with its own message, which runs only once every import is in).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
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
    } finally {
      rmSync(`${REPO_ROOT}/${OUT}`, { recursive: true, force: true });
    }
  },
});
