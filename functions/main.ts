// The functions as their own process (split mode), on Deno or Bun:
//   MQ_KV=http://kv-host:4510 DENO_KV_ACCESS_TOKEN=… MQ_BROKER_TOKEN=… PORT=8080 \
//     deno run -A functions/main.ts        (or: bun run functions/main.ts)
// It keeps no state: it reads the route table and topic records the brokers keep in the
// coordination store (a KV Connect URL or etcd://, since a local KV file cannot be shared
// between processes), routes each call to the broker group that owns its queue (the
// cluster router, docs/cluster.md), and re-reads the routes when a group fails. Like runtime/main.ts it
// is an entry file: the only place here that reads the environment and picks the platform.
import process from "node:process";
import { createApp } from "./app.ts";
import { instrumentFetch, processLines } from "./http_metrics.ts";
import { brokerLink, clusterRouter, readBrokerCa } from "./broker_link.ts";
import { pickPlatform } from "../runtime/platform/pick.ts";
import { FUNCTIONS_HOST_DEFAULT, functionsSettingsFromEnv } from "../runtime/protocol/limits.ts";
import { ConfigError } from "../runtime/protocol/setting.ts";
import { jsonLogger } from "../runtime/log.ts";
import { grpcSettingsFromEnv } from "../runtime/protocol/grpc_settings.ts";
import { family } from "../runtime/protocol/prom_text.ts";

const env = (name: string, fallback: string) => process.env[name] || fallback;
const int = (name: string, fallback: number) => {
  const v = env(name, String(fallback));
  if (!/^\d+$/.test(v)) throw new Error(`${name} must be a non-negative integer`);
  return Number(v);
};

const platform = await pickPlatform();
const nowMs = platform.clock.wallMs;
const log = jsonLogger({
  level: env("MQ_LOG_LEVEL", "info") as "info",
  nowMs,
  write: (l) => process.stderr.write(l),
});
const kvUrl = env("MQ_KV", "");
if (!kvUrl) {
  process.stderr.write("MQ_KV must name the KV Connect endpoint the brokers register in\n");
  process.exit(2);
}
// The limits and route timings: the broker's rows (runtime/protocol/limits.ts), so unset
// variables mean the brokers' own defaults.
let settings, grpcSettings, brokerCa;
try {
  settings = functionsSettingsFromEnv(process.env);
  grpcSettings = grpcSettingsFromEnv(process.env);
  brokerCa = await readBrokerCa(settings.brokerCaFile);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`config error: ${err.message}\n`);
  process.exit(2);
}
const { limits, routeExpiryMs, routeCacheMs } = settings;
// Loaded only when on, and from now, while the KV opens (cold start: bench/README.md "Round 3 (branch hot-start)").
const grpcModule = grpcSettings.grpcEnabled ? import("./grpc/server.ts") : undefined;
const kv = await platform.openKv(kvUrl, { accessToken: env("DENO_KV_ACCESS_TOKEN", "") });
const brokerToken = env("MQ_BROKER_TOKEN", "") || undefined;
// The SDK client with the operations, transaction and QStash calls (so /v2 is served here too).
// Brokers serving TLS with a private CA: trusted through MQ_BROKER_CA_FILE (docs/operations.md).
const brokers = brokerLink(
  brokerToken,
  {
    ...(brokerCa ? { fetch: platform.fetchTrusting(brokerCa) } : {}),
    binaryBatches: settings.brokerLinkBinaryBatches,
  },
);
// The cluster router: one group or many, each call goes to the group that owns its queue;
// the QStash calls keep every group signing with the same keys (ClusterQstash).
let router;
try {
  router = clusterRouter({
    kv,
    cluster: settings.cluster,
    link: brokers,
    routeExpiryMs,
    routeCacheMs,
    nowMs,
    env: process.env,
    log,
  });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`config error: ${err.message}\n`);
  process.exit(2);
}
const resolver = router.resolver;
const apiKeys = JSON.parse(env("MQ_API_KEYS", "[]"));
const startedMs = Date.now();
// This process's own figures: the brokers serve theirs on their own ports.
const http = instrumentFetch((request) => app.fetch(request));
const app = await createApp({
  broker: resolver,
  apiKeys,
  limits,
  corsOrigins: settings.corsOrigins,
  // Only health, produce and the OpenAPI document now; the other route families on first use.
  lazy: true,
  log,
  qstash: router.qstash,
  metrics: () =>
    [
      ...http.lines(),
      ...processLines(startedMs, Date.now(), process.memoryUsage().rss),
      ...routeCacheLines(router.cacheStats()),
      ...coalesceLines(router.coalesceStats()),
    ].join("\n") + "\n",
});

const hostname = env("HOST", FUNCTIONS_HOST_DEFAULT);
const port = int("PORT", 8080);
const server = await platform.serve({
  hostname,
  port,
  connections: settings.connections,
  maxRequestBodyBytes: settings.requestBodyBytesBackstop,
}, http.fetch);
// The RocketMQ 5 gRPC front end (docs/grpc.md), on the platform's own TCP listener;
// Deno Deploy has no such server, so functions/deploy.ts has none.
const grpc = grpcModule
  ? await (await grpcModule).startGrpcServer({
    broker: resolver,
    apiKeys,
    settings: grpcSettings,
    host: hostname,
    log,
    brokerName: env("MQ_BROKER_NAME", "broker-a"),
    maxMessageSize: limits.maxMessageSize,
    pullWaitMsMax: limits.pullWaitMsMax,
    nowMs,
    goawayShield: platform.name === "deno",
    listen: (address, onSocket) => platform.listenTcpConnections(address, onSocket),
  })
  : undefined;
const url = `http://${hostname}:${server.port}`;
const grpcAddress = grpc ? `${hostname}:${grpc.port}` : undefined;
log("info", "functions listening", { url, grpc: grpcAddress, kv: kvUrl });
process.stdout.write(
  JSON.stringify({ event: "listening", url, grpc: grpcAddress, pid: process.pid }) + "\n",
);

/** The route cache's counters (bench/cluster: route_cache_hit_ratio). */
function routeCacheLines({ hits, misses }: { hits: number; misses: number }): string[] {
  return [
    ...family(
      "mq_cluster_route_cache_hits_total",
      "counter",
      "Topic routes answered from the route cache.",
      hits,
    ),
    ...family(
      "mq_cluster_route_cache_misses_total",
      "counter",
      "Topic routes read from the coordination store.",
      misses,
    ),
  ];
}

/** The produce coalescer's counters (bench/cluster: hop_coalesced_per_batch). */
function coalesceLines({ batches, messages }: { batches: number; messages: number }): string[] {
  return [
    ...family(
      "mq_cluster_produce_coalesced_batches_total",
      "counter",
      "Batch calls made of concurrent single produces.",
      batches,
    ),
    ...family(
      "mq_cluster_produce_coalesced_messages_total",
      "counter",
      "Single produces sent inside those batch calls.",
      messages,
    ),
  ];
}

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await Promise.all([server.close(), grpc?.close()]);
  await router.close();
  kv.close();
  process.stdout.write(JSON.stringify({ event: "stopped", pid: process.pid }) + "\n");
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
