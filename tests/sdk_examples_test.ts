// The examples of examples/ run in their real runtimes against one real broker process:
// Cloudflare's workerd (Miniflare 3, from Node), Vercel's edge-runtime, Deno with no file
// system access, Bun, Node importing the npm package that `npm pack` made, and a page in
// headless Chromium whose produce works only from an origin in MQ_CORS_ORIGINS.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { generateWebhookSecret } from "../client/webhooks.ts";
import { packSdkNpm } from "../scripts/build_sdk_npm.ts";
import { startBroker } from "./harness/broker.ts";
import { ChildRun, REPO_ROOT, runtimeBinary } from "./harness/process.ts";

const NODE_BIN = `${REPO_ROOT}/node_modules/.bin`;
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

function run(label: string, cmd: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(cmd, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new ChildRun(child, label);
}

async function listening(child: ChildRun): Promise<string> {
  const { url } = await child.waitForJson<{ url: string }>(
    `${child.label} listening`,
    (v) => v.event === "listening",
  );
  return url;
}

/** Runs a command to its end; its stdout's last line, parsed. */
async function output<T>(child: ChildRun, deadlineMs = 30_000): Promise<T> {
  const timer = setTimeout(() => child.kill("SIGKILL"), deadlineMs);
  const { code } = await child.exited;
  clearTimeout(timer);
  if (code !== 0) {
    throw new Error(`${child.label} exited ${code}: ${child.stderr.join("").slice(-2000)}`);
  }
  return JSON.parse(child.lines.filter((l) => l.trim()).pop()!);
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: "POST", body, headers });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

/** Serves the browser example (page.ts bundled by esbuild) on port 0. */
async function pageServer(dir: string) {
  const build = await new Deno.Command(`${NODE_BIN}/esbuild`, {
    args: [
      `${REPO_ROOT}/examples/browser/page.ts`,
      "--bundle",
      "--format=esm",
      `--outfile=${dir}/page.js`,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(build.success, new TextDecoder().decode(build.stderr));
  const files: Record<string, [string, string]> = {
    "/": [await Deno.readTextFile(`${REPO_ROOT}/examples/browser/index.html`), "text/html"],
    "/page.js": [await Deno.readTextFile(`${dir}/page.js`), "text/javascript"],
  };
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const file = files[new URL(req.url).pathname];
    return file
      ? new Response(file[0], { headers: { "content-type": file[1] } })
      : new Response("not found", { status: 404 });
  });
}

Deno.test("the examples produce from workerd, edge-runtime, Deno, Bun, Node and a browser; the webhook worker verifies a real delivery", async (t) => {
  const dir = mkdtempSync(`${tmpdir()}/mq-sdk-examples-`);
  const allowed = await pageServer(dir);
  const other = await pageServer(dir);
  const allowedOrigin = `http://127.0.0.1:${allowed.addr.port}`;
  await using broker = await startBroker("deno", {
    env: { MQ_CORS_ORIGINS: allowedOrigin, MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1" },
  });
  const mq = broker.client;
  const children: ChildRun[] = [];
  const start = (label: string, cmd: string, args: string[], env: Record<string, string>) => {
    const child = run(label, cmd, args, env);
    children.push(child);
    return child;
  };
  const viaOf = async (messageId: string) =>
    (await mq.getMessageById(messageId, "orders")).properties.via;
  try {
    await t.step("a Cloudflare Worker in workerd produces on request", async () => {
      const worker = start("workerd produce", "node", [
        "examples/cloudflare/run.mjs",
        "examples/cloudflare/produce_worker.ts",
      ], {
        WORKER_BINDINGS: JSON.stringify({ MQ_URL: broker.url }),
      });
      const url = await listening(worker);
      const first = await post(url, "order 1", { "idempotency-key": "order-1" });
      assert.equal(first.status, 201, JSON.stringify(first.json));
      assert.equal(await viaOf(first.json.messageId), "cloudflare");
      const again = await post(url, "order 1", { "idempotency-key": "order-1" });
      assert.equal(again.json.messageId, first.json.messageId);
      assert.equal(again.json.idempotentReplay, true);
    });

    await t.step(
      "the webhook worker verifies a real delivery and refuses a tampered one",
      async () => {
        const secret = generateWebhookSecret();
        const worker = start("workerd webhook", "node", [
          "examples/cloudflare/run.mjs",
          "examples/cloudflare/webhook_worker.ts",
        ], {
          WORKER_BINDINGS: JSON.stringify({ WEBHOOK_SECRET: secret }),
        });
        const url = await listening(worker);
        await mq.produce("hooked", { body: '{"order":7}', contentType: "application/json" });
        await mq.upsertSubscription("hook-example", {
          topic: "hooked",
          url,
          secrets: [secret],
          startFrom: "earliest",
        });
        let seen: { headers: Record<string, string>; body: string }[] = [];
        const deadline = Date.now() + 20_000;
        while (seen.length === 0 && Date.now() < deadline) {
          seen = await (await fetch(url)).json();
          if (seen.length === 0) await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(seen.length, 1, "the worker verified one delivery");
        const { headers, body } = seen[0];
        assert.match(body, /"order":7|order/);
        const attempts = await mq.listDeliveries("hook-example");
        assert.ok(attempts.some((a) => a.outcome === "delivered" && a.status === 204));
        const tampered = await post(url, body.replace("7", "8"), headers);
        assert.equal(tampered.status, 401);
        assert.equal(tampered.json.refused, "NO_MATCHING_SIGNATURE");
        const replayed = await post(url, body, headers); // the same bytes still verify
        assert.equal(replayed.status, 204);
        await mq.deleteSubscription("hook-example");
      },
    );

    await t.step("a Vercel edge route in edge-runtime produces", async () => {
      const route = start("edge-runtime", "node", ["examples/vercel/run.mjs"], {
        MQ_URL: broker.url,
      });
      const res = await post(await listening(route), "from the edge", { "x-order-id": "o-9" });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      const stored = await mq.getMessageById(res.json.messageId, "orders");
      assert.deepEqual([stored.properties.via, stored.keys], ["vercel-edge", ["o-9"]]);
    });

    await t.step("a Deno Deploy-style handler produces with no file system access", async () => {
      const server = start("deno serve", runtimeBinary("deno"), [
        "serve",
        "--allow-net=127.0.0.1",
        "--allow-env=MQ_URL,MQ_TOKEN",
        "--host=127.0.0.1",
        "--port=0",
        "examples/deno/main.ts",
      ], { MQ_URL: broker.url });
      const url = await server.waitFor(
        "deno serve listening",
        () => server.stderr.join("").match(/Listening on (http:\/\/[\d.:]+)/)?.[1],
      );
      const res = await post(`${url}/?customer=c-1`, "from deno");
      assert.equal(res.status, 201, JSON.stringify(res.json));
      assert.equal(await viaOf(res.json.messageId), "deno");
    });

    await t.step("a Bun server produces", async () => {
      const server = start("bun server", runtimeBinary("bun"), ["run", "examples/bun/server.ts"], {
        MQ_URL: broker.url,
        PORT: "0",
      });
      const res = await post(await listening(server), "from bun");
      assert.equal(res.status, 201, JSON.stringify(res.json));
      assert.equal(await viaOf(res.json.messageId), "bun");
    });

    await t.step("Node imports the packed npm package: produce a batch, consume it", async () => {
      const tarball = await packSdkNpm(`${dir}/npm`);
      const app = `${dir}/app`;
      const pkg = `${app}/node_modules/@edgemq/client`;
      Deno.mkdirSync(pkg, { recursive: true });
      const untar = await new Deno.Command("tar", {
        args: ["-xzf", tarball, "-C", pkg, "--strip-components=1"],
      }).output();
      assert.ok(untar.success);
      writeFileSync(`${app}/package.json`, '{"type":"module"}');
      Deno.copyFileSync(`${REPO_ROOT}/examples/node/produce.mjs`, `${app}/produce.mjs`);
      const child = run("node example", "node", [`${app}/produce.mjs`], {
        MQ_URL: broker.url,
        TOPIC: "node-orders",
      });
      const result = await output<{ produced: number; consumed: string[] }>(child);
      assert.deepEqual({ ...result, consumed: result.consumed.sort() }, {
        produced: 2,
        consumed: ["first", "second"],
      });
      // The declarations type-check for a TypeScript app using the package.
      writeFileSync(
        `${app}/use.ts`,
        `import { MqClient, type ProduceResult } from "@edgemq/client";
import { verifyWebhook } from "@edgemq/client/webhooks";
const r: Promise<ProduceResult> = new MqClient({ baseUrl: "x" }).produce("t", { body: "b" });
void r; void verifyWebhook;
`,
      );
      const tsc = await new Deno.Command(`${NODE_BIN}/tsc`, {
        args: [
          "--noEmit",
          "--strict",
          "--module",
          "nodenext",
          "--moduleResolution",
          "nodenext",
          "--target",
          "es2022",
          "--lib",
          "es2022,dom",
          "use.ts",
        ],
        cwd: app,
        stdout: "piped",
      }).output();
      assert.ok(tsc.success, new TextDecoder().decode(tsc.stdout));
    });

    await t.step("a browser page produces only from an origin in MQ_CORS_ORIGINS", async () => {
      if (!existsSync(CHROMIUM)) {
        console.log(`skipped: no Chromium at ${CHROMIUM} (scripts/install.sh installs it)`);
        return;
      }
      const open = (origin: string) =>
        output<{ ok: boolean; messageId?: string; error?: string }>(
          run("chromium", "node", [
            "examples/browser/run.mjs",
            `${origin}/?auto=1&broker=${encodeURIComponent(broker.url)}`,
          ]),
        );
      const ok = await open(allowedOrigin);
      assert.equal(ok.ok, true, JSON.stringify(ok));
      assert.equal(await viaOf(ok.messageId!), "browser");
      const refused = await open(`http://127.0.0.1:${other.addr.port}`);
      assert.deepEqual(refused, { ok: false, error: "BROKER_UNAVAILABLE" }); // CORS: no answer
    });
  } finally {
    for (const child of children) child.kill("SIGTERM");
    await Promise.all(children.map((c) => c.exited));
    await allowed.shutdown();
    await other.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});
