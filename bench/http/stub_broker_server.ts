// The broker's HTTP app with a broker that costs nothing: createApp() and instrumentFetch,
// served as runtime/main.ts serves them, over a `produce` that answers at once. Against
// hello_server.ts it shows what the functions layer (Hono app, produce route, metrics)
// costs a produce; against the broker, what the core and storage cost (bench/README.md,
// "Produce path (issue #27, round 3…)"). Prints {"event":"listening","url":…} like the
// others; drive it with autocannon (POST /v1/topics/<t>/messages) and read its CPU from
// /proc (bench/support.ts processCpuMs). NO_METRICS=1 serves app.fetch without the wrapper.
//   deno run -A bench/http/stub_broker_server.ts     (or: bun run …)
import process from "node:process";
import { createApp } from "../../functions/app.ts";
import { instrumentFetch } from "../../functions/http_metrics.ts";
import { instantBroker } from "./instant_broker.ts";

// A profiler (--cpu-prof) writes its profile on exit: SIGTERM exits.
process.on("SIGTERM", () => process.exit(0));

const broker = instantBroker();
const app = await createApp({
  broker: { get: () => Promise.resolve(broker as never), failed: () => {} },
  apiKeys: [],
  limits: {
    maxMessageSize: 4 * 1024 * 1024,
    batchBodyBytesMax: 4 * 1024 * 1024,
    batchItemsMax: 1000,
    bodyReadTimeoutMs: 30_000,
    pullWaitMsMax: 30_000,
    pullMsgNumsMax: 1000,
    idempotencyKeyBytesMax: 256,
    userPropertiesMax: 64,
  },
  log: () => {},
});
const fetch = process.env.NO_METRICS
  ? (r: Request) => app.fetch(r)
  : instrumentFetch((r) => app.fetch(r)).fetch;

const ready = (port: number) =>
  process.stdout.write(
    JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}` }) + "\n",
  );
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
if (g.Deno) {
  g.Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: (a: { port: number }) => ready(a.port) },
    fetch,
  );
} else {
  ready(g.Bun.serve({ hostname: "127.0.0.1", port: 0, fetch, idleTimeout: 0 }).port);
}
