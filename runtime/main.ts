// Broker entry point, the same file on Deno (`deno run -A runtime/main.ts`) and Bun
// (`bun run runtime/main.ts`). Like each entry file, the one place in its process that reads
// the environment and picks the platform (runtime/platform/pick.ts). Prints one JSON line
// on stdout once listening:
//   {"event":"listening","url":"http://127.0.0.1:8080","grpc":"127.0.0.1:8081","pid":123,
//    "runtime":"deno","namesrv":"127.0.0.1:9876","remoting":"127.0.0.1:10911"}
//   (grpc, namesrv and remoting when they are on; an https:// url with httpTlsCertFile)
import process from "node:process";
import { readFileSync, statfsSync } from "node:fs";
import { ConfigError, loadBrokerConfig, settingsHelp } from "./config.ts";
import { jsonLogger } from "./log.ts";
import { Broker } from "./broker.ts";
import { pickPlatform } from "./platform/pick.ts";
import { createApp } from "../functions/app.ts";
import { instrumentFetch, processLines } from "../functions/http_metrics.ts";
import type { RemotingFront } from "../functions/remoting/mod.ts";
import { functionsLimits, httpConnectionLimits } from "./protocol/limits.ts";
import { httpUrlOf, startRouteRegistration } from "./route_registry.ts";
import type { HaNode } from "./ha/node.ts";
import { haRoutes, leaderCore, loneRoutes } from "./remoting_ha.ts";
import { storeHostOf } from "./core/store_host.ts";
import { BrokerError } from "./protocol/errors.ts";
import { Readiness } from "./readiness.ts";
import { IdleGc, idleGcLines } from "./idle_gc.ts";
import { replicationPortHold, reservePort } from "./port_hold.ts";
import type { KvPort } from "./platform/kv_port.ts";
import type { GrpcServer } from "../functions/grpc/server.ts";

function readConfigFile(args: string[]): Record<string, unknown> {
  const i = args.findIndex((a) => a === "--config" || a.startsWith("--config="));
  if (i < 0) return {};
  const path = args[i].includes("=") ? args[i].split("=")[1] : args[i + 1];
  return JSON.parse(readFileSync(path, "utf8"));
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes("--help")) {
    process.stdout.write(
      `Usage: runtime/main.ts [--config file.json] [flags]\nFlags and environment variables:\n${settingsHelp()}\n`,
    );
    return;
  }
  let config;
  try {
    config = loadBrokerConfig(readConfigFile(args), process.env, args);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof SyntaxError) {
      process.stderr.write(`config error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // HTTPS: the certificate this broker serves, and the CA a slave trusts its master by.
  let httpTls, brokerCa;
  try {
    httpTls = config.httpTlsCertFile
      ? {
        cert: readFileSync(config.httpTlsCertFile, "utf8"),
        key: readFileSync(config.httpTlsKeyFile, "utf8"),
      }
      : undefined;
    brokerCa = config.brokerCaFile ? readFileSync(config.brokerCaFile, "utf8") : undefined;
  } catch (err) {
    process.stderr.write(`config error: httpTlsCertFile, httpTlsKeyFile or brokerCaFile: ${err}\n`);
    process.exit(2);
  }
  // Front ends and the HA node are loaded only when on, and start loading now, so their
  // modules load while the rest opens (cold start, bench/README.md "Cold start"). gRPC's
  // server.ts is only its port: grpc-js and node:http2 load on the first gRPC connection.
  const grpcModule = config.grpcEnabled ? import("../functions/grpc/server.ts") : undefined;
  const remotingModule = config.remotingEnable ? import("../functions/remoting/mod.ts") : undefined;
  const platform = await pickPlatform();
  let remotingPortHeld: { release(): Promise<void> } | undefined;
  if (config.remotingEnable && config.remotingPort === 0) {
    // Records name the remoting port as their store host (offset message ids): pick it now,
    // before the store opens, and hold it until the remoting server binds it.
    const held = await reservePort(platform, config.host);
    remotingPortHeld = held;
    config = { ...config, remotingPort: held.port };
  }
  // A shared route table (a KV Connect URL or etcd://, read by split-mode functions and
  // other groups) opens while the store does, and registration awaits it before
  // "listening". A local KV file is this process's alone (docs/operations.md "Split"): no
  // other process reads a route written there, so a lone broker on one neither registers
  // nor opens it (on Bun that loads @deno/kv: 5.6 MiB of idle RSS, bench/README.md).
  const sharedRouteTable = /^(https?|etcd):\/\//.test(config.kvPath);
  const routeTableKv = config.haMode === "none" && sharedRouteTable
    ? platform.openKv(config.kvPath, { accessToken: config.kvAccessToken })
    : undefined;
  routeTableKv?.catch(() => {}); // a failed open is reported where registration awaits it
  const nowMs = platform.clock.wallMs;
  const log = jsonLogger({
    level: config.logLevel,
    nowMs,
    write: (line) => process.stderr.write(line),
  });
  const diskUsedRatio = () => {
    try {
      const s = statfsSync(config.dataDir);
      return s.blocks > 0 ? ((s.blocks - s.bavail) / s.blocks) * 100 : 0;
    } catch {
      return 0;
    }
  };
  const deps = {
    config,
    files: platform.files,
    nowMs,
    log,
    runtime: `${platform.name} ${platform.version}`,
    pid: process.pid,
    random: Math.random,
    diskUsedRatio,
    bodyText: platform.bodyText,
    openSqlite: platform.openSqlite,
  };
  // On its own, one Broker for the life of the process, opened once the port answers (so
  // /readyz can show recovery progress); in a replicated group, the HaNode (started once
  // the HTTP address is known) says which Broker, if any, serves clients.
  const standalone = config.haMode === "none";
  const readiness = new Readiness();
  let broker: Broker | undefined;
  let node: HaNode | undefined;
  const started = () => {
    if (!node) {
      throw new BrokerError("BROKER_UNAVAILABLE", "Cannot answer: the replica is starting");
    }
    return node;
  };
  const startedMs = Date.now();
  const http = instrumentFetch((request) => app.fetch(request));
  // Gives memory back once the process goes idle (runtime/idle_gc.ts); none to ask for on Bun.
  const idleGc = new IdleGc({
    windowMs: platform.collectGarbage ? config.idleGcMs : 0,
    intervalMs: config.idleGcIntervalMs,
    cpuPercent: config.idleGcCpuPercent,
    collect: () => {
      try {
        platform.collectGarbage?.();
      } catch (err) {
        log("warn", "idle collection failed", { err: String(err) });
      }
    },
    cpuMicros: () => {
      const { user, system } = process.cpuUsage();
      return user + system;
    },
    nowMs: () => performance.now(),
  });
  // Every front end finds the broker here per call: refused while it recovers.
  const resolver = {
    get: () =>
      broker
        ? Promise.resolve(broker)
        : standalone
        ? Promise.reject(readiness.refusal())
        : Promise.resolve().then(() => node!.client()),
    failed: () => {},
  };
  const app = await createApp({
    broker: resolver,
    apiKeys: config.apiKeys,
    limits: functionsLimits(config),
    corsOrigins: config.corsOrigins,
    // Only health, produce and the OpenAPI document now; the other route families on first use.
    lazy: true,
    log,
    readiness: () => readiness.info(),
    metrics: async () =>
      (await (broker?.metrics() ?? node?.metrics() ?? "")) +
      [
        ...http.lines(),
        ...processLines(startedMs, Date.now(), process.memoryUsage().rss),
        ...idleGcLines(idleGc),
      ]
        .join("\n") +
      "\n",
    // The resolved broker is a Broker here, whether our own or the replicated group's
    // current master (node.client()); while it recovers the resolver refuses first.
    qstash: (b) => (b as Broker).qstash,
    // A replicated group's status and metadata routes; the node starts once the HTTP
    // address is known, so until then they answer 503.
    ha: config.haMode === "none" ? undefined : {
      status: () => started().status(),
      metadataSnapshot: () => Promise.resolve().then(() => started().metadataSnapshot()),
    },
  });
  const server = await platform.serve({
    hostname: config.host,
    port: config.port,
    connections: httpConnectionLimits(config, config.host),
    // A backstop only: functions/body.ts enforces the real limits with typed errors, which
    // Bun's own early 413 would pre-empt.
    maxRequestBodyBytes: config.requestBodyBytesBackstop,
    tls: httpTls,
  }, http.fetch);
  // The RocketMQ 5 gRPC front end (docs/grpc.md) over the same broker.
  const grpc: GrpcServer | undefined = grpcModule
    ? await (await grpcModule).startGrpcServer({
      broker: resolver,
      apiKeys: config.apiKeys,
      settings: config,
      host: config.host,
      log,
      brokerName: config.brokerName,
      maxMessageSize: config.store.maxMessageSize,
      pullWaitMsMax: config.pullWaitMsMax,
      nowMs,
      records: () => broker,
      goawayShield: platform.name === "deno",
      listen: (address, onSocket) => platform.listenTcpConnections(address, onSocket),
    })
    : undefined;
  const address = config.advertisedAddress.endsWith(":0") || config.port === 0
    ? `${config.host}:${server.port}`
    : config.advertisedAddress;
  if (standalone) {
    readiness.recovering();
    process.stdout.write(
      JSON.stringify({ event: "recovering", url: httpUrlOf(config, address), pid: process.pid }) +
        "\n",
    );
    broker = await Broker.open({ ...deps, onRecoveryProgress: (p) => readiness.progress(p) });
  }
  // The RocketMQ remoting front end (NameServer and broker roles) over the same core. In a
  // replicated group it runs on every replica before the node starts (the lease carries
  // its address): calls go to this replica's Broker while it is master (runtime/remoting_ha.ts).
  let remoting: RemotingFront | undefined;
  let kv: KvPort | undefined;
  /** A lone broker's NameServer reads other groups from the KV route table (opened lazily). */
  let routeKv: Promise<KvPort> | undefined;
  if (remotingModule) {
    const startRemoting = (await remotingModule).startRemoting;
    await remotingPortHeld?.release();
    remoting = await startRemoting({
      core: broker ?? leaderCore(() => started().client() as Broker),
      routes: broker
        ? (self) =>
          loneRoutes({
            kv: () =>
              sharedRouteTable
                ? routeKv ??= platform.openKv(config.kvPath, { accessToken: config.kvAccessToken })
                : undefined,
            cluster: config.brokerClusterName,
            brokerName: config.brokerName,
            routeExpiryMs: config.routeExpiryMs,
            nowMs,
          }, self)
        : (self) =>
          haRoutes({
            node: () => node,
            kv: () => kv,
            cluster: config.brokerClusterName,
            brokerName: config.brokerName,
            routeExpiryMs: config.routeExpiryMs,
            nowMs,
          }, self),
      apiKeys: config.apiKeys,
      log,
      listen: (o, onSocket) => platform.listenTcpConnections(o, onSocket),
      host: config.host,
      advertisedHost: config.remotingAdvertisedHost,
      namesrvPort: config.namesrvPort,
      remotingPort: config.remotingPort,
      brokerName: config.brokerName,
      clusterName: config.brokerClusterName,
      storeHost: storeHostOf(config),
      autoCreateTopics: config.autoCreateTopicEnable,
      autoCreateGroups: config.autoCreateSubscriptionGroup,
      defaultTopicQueueNums: config.defaultTopicQueueNums,
      frameBytesMax: config.remotingFrameBytesMax,
      idleTimeoutMs: config.remotingIdleTimeoutMs,
      connectionsMax: config.remotingConnectionsMax,
      inFlightMax: config.remotingInFlightMax,
      popHandlesMax: config.remotingPopHandlesMax,
      subscriptionsMax: config.remotingSubscriptionsMax,
    }).catch(async (err) => {
      // A taken port: say which setting to change, and close the store cleanly.
      process.stderr.write(`${(err as Error).message}\n`);
      await Promise.all([server.close(), grpc?.close()]);
      await broker?.close();
      process.exit(2);
    });
  }
  if (!broker) {
    kv = await platform.openKv(config.kvPath, { accessToken: config.kvAccessToken });
    const haPortHold = config.haPort
      ? undefined
      : await replicationPortHold(platform, config.haHost, log);
    const haPort = config.haPort || haPortHold!.port;
    const { HaNode } = await import("./ha/node.ts");
    node = new HaNode({
      ...deps,
      kv,
      openKv: platform.openKv,
      httpAddress: address,
      haAddress: { host: config.haAdvertisedHost, port: haPort },
      haPortHold,
      remotingAddress: remoting?.brokerAddress,
      brokerFetch: brokerCa ? platform.fetchTrusting(brokerCa) : undefined,
    });
    await node.start();
  }
  const register = (b: Broker) =>
    startRouteRegistration({
      config,
      address,
      remotingAddress: remoting?.brokerAddress,
      broker: b,
      log,
      nowMs,
      openKv: (path, options) => routeTableKv ?? platform.openKv(path, options),
    });
  const routes = broker && sharedRouteTable ? await register(broker) : undefined;
  readiness.ready();
  log("info", "broker listening", {
    address,
    dataDir: config.dataDir,
    flushDiskType: config.store.flushDiskType,
  });
  process.stdout.write(
    JSON.stringify({
      event: "listening",
      url: httpUrlOf(config, address),
      ...(grpc ? { grpc: `${config.host}:${grpc.port}` } : {}),
      pid: process.pid,
      runtime: platform.name,
      ...(remoting && { namesrv: remoting.namesrvAddress, remoting: remoting.brokerAddress }),
    }) + "\n",
  );

  idleGc.start();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    idleGc.stop();
    readiness.stopping();
    log("info", "shutting down", { signal });
    const force = setTimeout(() => {
      log("error", "graceful shutdown took too long; exiting", {
        shutdownGraceMs: config.shutdownGraceMs,
      });
      process.exit(1);
    }, config.shutdownGraceMs);
    broker?.drain();
    node?.drain();
    await Promise.all([server.close(), grpc?.close()]);
    await remoting?.close();
    await routeKv?.then((k) => k.close(), () => {});
    await routes?.stop();
    await broker?.close();
    if (node) {
      await node.stop();
      // A KV client retries for as long as the KV is down: bound the wait, exit anyway.
      await Promise.race([
        node.whenStoreIdle(),
        new Promise((r) => setTimeout(r, config.kvCloseWaitMs)),
      ]);
      kv?.close();
    }
    clearTimeout(force);
    log("info", "stopped cleanly");
    process.stdout.write(JSON.stringify({ event: "stopped", pid: process.pid }) + "\n");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

await main();
