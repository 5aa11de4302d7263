// Entry for the edge functions: Deno Deploy (`deno deploy`), or an edge host running Bun
// (`bun run functions/deploy.ts`) or Deno. The stateless functions only: edge hosts have no
// durable file system and stop instances at any time, so the broker runs elsewhere and
// registers itself in a KV database this app reads. On Deno Deploy that is the app's own
// (`Deno.openKv()` with MQ_KV unset: attach the production KV database to the app; brokers
// outside Deploy reach it by its KV Connect URL and an access token); elsewhere MQ_KV names
// it. Unlike functions/main.ts: no gRPC port and no connection guard (the edge host fronts
// connections). Settings come from the app's environment variables:
//   MQ_API_KEYS          JSON list of API keys (required: an open API is refused)
//   MQ_BROKER_TOKEN      the API key this app presents to brokers (an admin key there)
//   MQ_KV                KV Connect URL or etcd://… (required off Deno Deploy), with
//   DENO_KV_ACCESS_TOKEN its access token
//   MQ_BROKER_CA_FILE    CA bundle for brokers serving TLS with a private CA
//   HOST, PORT           where to listen (0.0.0.0:8000; Deploy picks the address itself)
import process from "node:process";
import { createApp } from "./app.ts";
import { brokerLink, clusterRouter, readBrokerCa } from "./broker_link.ts";
import { pickPlatform } from "../runtime/platform/pick.ts";
import { functionsSettingsFromEnv } from "../runtime/protocol/limits.ts";

/** Deno.serve's defaults. */
const HOSTNAME_DEFAULT = "0.0.0.0";
const PORT_DEFAULT = "8000";

const platform = await pickPlatform();
const nowMs = platform.clock.wallMs;
const env = (name: string, fallback = "") => process.env[name] || fallback;

// Only Deno has a KV of its own to open without a URL (Deploy's); the token is read from
// DENO_KV_ACCESS_TOKEN by Deno itself, and passed on Bun.
const kvUrl = env("MQ_KV");
if (!kvUrl && platform.name !== "deno") {
  throw new Error("Set MQ_KV to the KV Connect URL (or etcd://) the brokers register in");
}
const kv = await platform.openKv(kvUrl || undefined, {
  accessToken: env("DENO_KV_ACCESS_TOKEN") || undefined,
});
const apiKeys = JSON.parse(env("MQ_API_KEYS", "[]"));
if (!Array.isArray(apiKeys) || apiKeys.length === 0) {
  throw new Error("Set MQ_API_KEYS: the edge functions refuse to run open");
}
// The limits and route timings: the broker's rows, so unset variables mean the brokers'
// own defaults; a bad value throws a ConfigError naming it.
const {
  limits,
  routeExpiryMs,
  routeCacheMs,
  requestBodyBytesBackstop,
  corsOrigins,
  brokerCaFile,
  brokerLinkBinaryBatches,
  cluster,
} = functionsSettingsFromEnv(process.env);
const brokerCa = await readBrokerCa(brokerCaFile);
const log = (level: string, msg: string, fields?: Record<string, unknown>) =>
  console.log(JSON.stringify({ level, msg, ...fields }));
// The SDK client with the operations, transaction and QStash calls (so /v2 is served here too).
const brokers = brokerLink(
  env("MQ_BROKER_TOKEN") || undefined,
  {
    ...(brokerCa ? { fetch: platform.fetchTrusting(brokerCa) } : {}),
    binaryBatches: brokerLinkBinaryBatches,
  },
);
// The cluster router (docs/cluster.md): each call goes to the broker group that owns its
// queue; the QStash calls keep every group signing with the same keys. One group behaves as
// one broker.
const router = clusterRouter({
  kv,
  cluster,
  link: brokers,
  routeExpiryMs,
  routeCacheMs,
  nowMs,
  env: process.env,
  log,
});
const app = await createApp({
  broker: router.resolver,
  apiKeys,
  limits,
  corsOrigins,
  log,
  qstash: router.qstash,
  // Only health, produce and the OpenAPI document now; the other route families on first use.
  lazy: true,
});
const hostname = env("HOST", HOSTNAME_DEFAULT);
const server = await platform.serve({
  hostname,
  port: Number(env("PORT", PORT_DEFAULT)),
  maxRequestBodyBytes: requestBodyBytesBackstop,
}, app.fetch);
console.log(JSON.stringify({
  event: "listening",
  url: `http://${hostname}:${server.port}`,
  runtime: platform.name,
}));
