// Broker entry point, the same file on Deno (`deno run -A runtime/main.ts`) and Bun
// (`bun run runtime/main.ts`). The only place that reads the environment, the clock and
// which runtime this is. Prints one JSON line on stdout once listening:
//   {"event":"listening","url":"http://127.0.0.1:8080","pid":123,"runtime":"deno"}
import process from "node:process";
import { readFileSync, statfsSync } from "node:fs";
import { ConfigError, loadBrokerConfig, settingsHelp } from "./config.ts";
import { jsonLogger } from "./log.ts";
import { Broker } from "./broker.ts";
import type { Platform } from "./platform/platform.ts";
import { createApp } from "../functions/app.ts";
import { startRouteRegistration } from "./route_registry.ts";

async function pickPlatform(): Promise<Platform> {
  // Feature test, not name test: the bun test shim defines a Deno object without serve.
  // deno-lint-ignore no-explicit-any
  if ((globalThis as any).Deno?.serve) return (await import("./platform/deno.ts")).denoPlatform();
  return (await import("./platform/bun.ts")).bunPlatform();
}

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
  const platform = await pickPlatform();
  const nowMs = () => Date.now();
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
  const broker = new Broker({
    config,
    files: platform.files,
    nowMs,
    log,
    runtime: `${platform.name} ${platform.version}`,
    pid: process.pid,
    random: Math.random,
    diskUsedRatio,
  });
  await broker.start();
  const app = await createApp({
    broker: { get: () => Promise.resolve(broker), failed: () => {} },
    apiKeys: config.apiKeys,
    limits: {
      maxMessageSize: config.store.maxMessageSize,
      batchBodyBytesMax: config.batchBodyBytesMax,
      batchItemsMax: config.batchItemsMax,
      bodyReadTimeoutMs: config.bodyReadTimeoutMs,
      pullWaitMsMax: config.pullWaitMsMax,
      pullMsgNumsMax: config.pullMsgNumsMax,
      idempotencyKeyBytesMax: config.idempotencyKeyBytesMax,
      userPropertiesMax: config.userPropertiesMax,
    },
    log,
    metrics: () => broker.metrics(),
  });
  const server = await platform.serve({
    hostname: config.host,
    port: config.port,
    idleTimeoutSeconds: Math.ceil(config.pullWaitMsMax / 1000) + 30,
    // A backstop only: functions/body.ts enforces the real limits with typed errors, which
    // Bun's own early 413 would pre-empt.
    maxRequestBodyBytes: 1024 * 1024 * 1024,
  }, app.fetch);
  const address = config.advertisedAddress.endsWith(":0") || config.port === 0
    ? `${config.host}:${server.port}`
    : config.advertisedAddress;
  const routes = await startRouteRegistration({ config, address, broker, log, nowMs });
  log("info", "broker listening", {
    address,
    dataDir: config.dataDir,
    flushDiskType: config.store.flushDiskType,
  });
  process.stdout.write(
    JSON.stringify({
      event: "listening",
      url: `http://${address}`,
      pid: process.pid,
      runtime: platform.name,
    }) + "\n",
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log("info", "shutting down", { signal });
    const force = setTimeout(() => {
      log("error", "graceful shutdown took too long; exiting", {
        shutdownGraceMs: config.shutdownGraceMs,
      });
      process.exit(1);
    }, config.shutdownGraceMs);
    broker.drain();
    await server.close();
    await routes.stop();
    await broker.close();
    clearTimeout(force);
    log("info", "stopped cleanly");
    process.stdout.write(JSON.stringify({ event: "stopped", pid: process.pid }) + "\n");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

await main();
