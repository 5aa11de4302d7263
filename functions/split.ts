// The split-mode functions process, after functions/main.ts (its entry) has picked the
// platform and begun opening the KV: it keeps no state, reads the route table and topic
// records the brokers keep in the coordination store, routes each call to the broker group
// that owns its queue (the cluster router, docs/cluster.md), and re-reads the routes when a
// group fails. The environment comes from the entry, which alone reads it.
import process from "node:process";
import { createApp } from "./app.ts";
import { instrumentFetch, processLines } from "./http_metrics.ts";
import { brokerLink, clusterRouter, readBrokerCa } from "./broker_link.ts";
import type { Platform } from "../runtime/platform/platform.ts";
import type { KvPort } from "../runtime/platform/kv_port.ts";
import { FUNCTIONS_HOST_DEFAULT, functionsSettingsFromEnv } from "../runtime/protocol/limits.ts";
import { ConfigError } from "../runtime/protocol/setting.ts";
import { jsonLogger } from "../runtime/log.ts";
import { grpcSettingsFromEnv } from "../runtime/protocol/grpc_settings.ts";
import { family } from "../runtime/protocol/prom_text.ts";

export interface SplitStart {
  platform: Platform;
  env: Record<string, string | undefined>;
  kvUrl: string;
  /** Opening since the process began (functions/main.ts). */
  kv: Promise<KvPort>;
}

/** Serves the functions and the gRPC port, and stops on SIGTERM or SIGINT. */
export async function startSplitFunctions(
  { platform, env: vars, kvUrl, kv: kvOpening }: SplitStart,
) {
  const env = (name: string, fallback: string) => vars[name] || fallback;
  const int = (name: string, fallback: number) => {
    const v = env(name, String(fallback));
    if (!/^\d+$/.test(v)) throw new Error(`${name} must be a non-negative integer`);
    return Number(v);
  };

  const nowMs = platform.clock.wallMs;
  const log = jsonLogger({
    level: env("MQ_LOG_LEVEL", "info") as "info",
    nowMs,
    write: (l) => process.stderr.write(l),
  });
  // The limits and route timings: the broker's rows (runtime/protocol/limits.ts), so unset
  // variables mean the brokers' own defaults.
  let settings, grpcSettings, brokerCa;
  try {
    settings = functionsSettingsFromEnv(vars);
    grpcSettings = grpcSettingsFromEnv(vars);
    brokerCa = await readBrokerCa(settings.brokerCaFile);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`config error: ${err.message}\n`);
    process.exit(2);
  }
  const { limits, routeExpiryMs, routeCacheMs } = settings;
  // Loaded only when on, and from now, while the KV opens (cold start: bench/README.md "Round 3 (branch hot-start)").
  const grpcModule = grpcSettings.grpcEnabled ? import("./grpc/server.ts") : undefined;
  const kv = await kvOpening;
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
      env: vars,
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
}

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
