// The broker link over HTTPS (issue #26 item 6), real processes on both runtimes: a broker
// serving TLS with a certificate from a throwaway CA registers an https:// URL in a KV
// Connect host; a split-mode functions process given the CA (MQ_BROKER_CA_FILE) produces
// and pulls through it; one without the CA is refused with an error that names the setting,
// and stores nothing; the edge entry (functions/deploy.ts) runs on this runtime too and
// answers a produce over the same link. A replicated group serving TLS: the slave copies its
// master's metadata over HTTPS, trusting the same CA.
import assert from "node:assert/strict";
import process from "node:process";
import { readFileSync } from "node:fs";
import { type ChildRun, RUNTIMES, startChild } from "./harness/process.ts";
import { startBroker, startFunctions } from "./harness/broker.ts";
import { makeTestPki, pkiUnavailable, type TestPki } from "./harness/tls.ts";
import { Cluster } from "./harness/cluster.ts";
import { pickPlatform } from "../runtime/platform/pick.ts";
import type { HaStatus } from "../runtime/protocol/ha_api.ts";
import { MqClient } from "../client/mod.ts";
import { decodeRoute, ROUTES_PREFIX } from "../runtime/protocol/routes.ts";

// Deno.openKv reads the token from the environment, which tests in other files running in
// this process may also use: adopt one that is already set rather than overwrite it.
process.env.DENO_KV_ACCESS_TOKEN ??= "kv-tls-test-token-0123456789";
const TOKEN = process.env.DENO_KV_ACCESS_TOKEN;
const API_KEY = "edge-tls-test-key-0123456789";

const skip = pkiUnavailable();
if (skip) console.log(`broker_tls_test: skipped, ${skip}`);

async function startKvHost(): Promise<{ host: ChildRun; url: string }> {
  const host = startChild("deno", "tools/kv_host/main.ts", ["--port", "0", "--token", TOKEN]);
  const { url } = await host.waitForJson<{ url: string }>(
    "KV host url",
    (v) => typeof v.url === "string",
  );
  return { host, url };
}

/** functions/deploy.ts on `runtime`, against the KV host, trusting the test CA. */
async function startEdge(runtime: "deno" | "bun", kvUrl: string, pki: TestPki) {
  const child = startChild(runtime, "functions/deploy.ts", [], {
    HOST: "127.0.0.1",
    PORT: "0",
    MQ_KV: kvUrl,
    DENO_KV_ACCESS_TOKEN: TOKEN,
    MQ_API_KEYS: JSON.stringify([{ key: API_KEY, name: "edge", admin: true }]),
    MQ_BROKER_CA_FILE: pki.caFile,
  });
  try {
    const { url } = await child.waitForJson<{ url: string }>(
      "edge functions listening",
      (v) => v.event === "listening",
    );
    return { child, client: new MqClient({ baseUrl: url, token: API_KEY, retries: 0 }) };
  } catch (err) {
    await child[Symbol.asyncDispose]();
    throw err;
  }
}

for (const runtime of RUNTIMES) {
  Deno.test({
    name:
      `broker link over TLS on ${runtime}: https:// route, trusted through MQ_BROKER_CA_FILE only`,
    ignore: skip !== undefined,
    fn: async () => {
      using pki = makeTestPki();
      const { host, url: kvUrl } = await startKvHost();
      await using _kvHost = host;
      await using broker = await startBroker(runtime, {
        env: {
          MQ_KV: kvUrl,
          DENO_KV_ACCESS_TOKEN: TOKEN,
          MQ_HTTP_TLS_CERT_FILE: pki.certFile,
          MQ_HTTP_TLS_KEY_FILE: pki.keyFile,
          MQ_GRPC: "false",
          MQ_REMOTING: "false",
        },
      });
      assert.match(broker.url, /^https:\/\/127\.0\.0\.1:\d+$/);

      // The route entry names the https:// URL (readers take it through brokerUrl()).
      const kv = await Deno.openKv(kvUrl);
      try {
        const entry = await kv.get<Uint8Array>([...ROUTES_PREFIX, "DefaultCluster", "broker-a"]);
        const route = decodeRoute(entry.value!);
        assert.equal(route?.url, broker.url);
      } finally {
        kv.close();
      }

      const [trusting, untrusting, edge] = await Promise.all([
        startFunctions(runtime, { kvUrl, kvToken: TOKEN, env: { MQ_BROKER_CA_FILE: pki.caFile } }),
        startFunctions(runtime, { kvUrl, kvToken: TOKEN }),
        startEdge(runtime, kvUrl, pki),
      ]);
      await using _t = trusting;
      await using _u = untrusting;
      await using _e = edge.child;

      const mq = trusting.client;
      await mq.upsertTopic("Tls", { readQueueNums: 1, writeQueueNums: 1 });
      await mq.produce("Tls", { body: "over https" });
      assert.deepEqual(
        (await mq.pull("Tls", 0, { offset: 0 })).messages.map((m) => m.body),
        ["over https"],
      );

      // Without the CA: refused by certificate verification, with the setting to set.
      const refused = await untrusting.client.produce("Tls", { body: "must not land" }).then(
        () => undefined,
        (err) => err,
      );
      assert.ok(refused, "a functions process without the CA reached the broker");
      assert.equal(refused.code, "BROKER_UNAVAILABLE");
      assert.match(refused.message, /MQ_BROKER_CA_FILE/);

      // The edge entry on this runtime, over the same link.
      await edge.client.produce("Tls", { body: "from the edge entry" });
      assert.deepEqual(
        (await mq.pull("Tls", 0, { offset: 0 })).messages.map((m) => m.body),
        ["over https", "from the edge entry"],
      );
    },
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`functions on ${runtime} refuse to start with an unreadable MQ_BROKER_CA_FILE`, async () => {
    await using child = startChild(runtime, "functions/main.ts", [], {
      PORT: "0",
      MQ_KV: "http://127.0.0.1:9", // never opened: the settings are read first
      MQ_BROKER_CA_FILE: "/nonexistent/ca.pem",
    });
    const { code } = await child.exited;
    assert.equal(code, 2);
    assert.match(child.stderr.join(""), /config error: MQ_BROKER_CA_FILE: cannot read/);
  });
}

Deno.test("the edge entry on bun stops at once without MQ_KV, naming it", async () => {
  await using child = startChild("bun", "functions/deploy.ts", [], { PORT: "0" });
  const { code } = await child.exited;
  assert.notEqual(code, 0);
  assert.match(child.stderr.join(""), /Set MQ_KV to the KV Connect URL/);
});

for (const runtime of RUNTIMES) {
  Deno.test({
    name:
      `replicated group over TLS on ${runtime}: the slave copies the master's metadata over https`,
    ignore: skip !== undefined,
    fn: async () => {
      using pki = makeTestPki();
      await using cluster = new Cluster(runtime, 2, {
        MQ_HTTP_TLS_CERT_FILE: pki.certFile,
        MQ_HTTP_TLS_KEY_FILE: pki.keyFile,
        MQ_BROKER_CA_FILE: pki.caFile,
        MQ_HA_METADATA_SYNC_MS: "200",
        MQ_GRPC: "false",
        MQ_REMOTING: "false",
        MQ_LOG_LEVEL: "debug",
      });
      await cluster.startKv();
      const procs = await Promise.all([cluster.start(0), cluster.start(1)]);
      assert.ok(procs.every((p) => p.url.startsWith("https://")));
      const trusting = (await pickPlatform()).fetchTrusting(readFileSync(pki.caFile, "utf8"));
      try {
        const status = async (url: string) => {
          const res = await trusting(`${url}/v1/ha/status`);
          return await res.json() as HaStatus;
        };
        const deadline = performance.now() + 20_000;
        let roles: HaStatus[] = [];
        while (performance.now() < deadline) {
          roles = await Promise.all(procs.map((p) => status(p.url)));
          if (roles.some((r) => r.role === "master") && roles.some((r) => r.role === "slave")) {
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        const slave = roles.findIndex((r) => r.role === "slave");
        assert.ok(slave >= 0, `no master and slave: ${JSON.stringify(roles)}`);
        await procs[slave].child.waitFor(
          "the slave's first metadata sync over https",
          () => procs[slave].child.stderr.join("").includes("metadata synced"),
          15_000,
        );
      } finally {
        trusting.close();
      }
    },
  });
}
