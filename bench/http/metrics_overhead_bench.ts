// What the HTTP duration histogram (functions/http_metrics.ts) adds per request: the same
// trivial handler called directly and through instrumentFetch, in the same run. Prints one
// JSON line; figures in bench/README.md ("HTTP metrics overhead").
//   deno run -A bench/http/metrics_overhead_bench.ts      (or: bun run …)
import process from "node:process";
import { instrumentFetch } from "../../functions/http_metrics.ts";

const N = Number(process.env.N ?? 300_000);
const response = new Response("x");
const handler = (_r: Request) => response;
const instrumented = instrumentFetch(handler);
const request = new Request("http://127.0.0.1:8080/v1/topics/orders/messages", { method: "POST" });

async function usPerCall(f: (r: Request) => Response | Promise<Response>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < N; i++) await f(request);
  return (performance.now() - started) * 1000 / N;
}

// Warm both paths first, then measure.
await usPerCall((r) => Promise.resolve(handler(r)));
await usPerCall(instrumented.fetch);
const base = await usPerCall((r) => Promise.resolve(handler(r)));
const withHistogram = await usPerCall(instrumented.fetch);
console.log(JSON.stringify({
  bench: "http_metrics_overhead",
  runtime: typeof (globalThis as { Bun?: unknown }).Bun !== "undefined" ? "bun" : "deno",
  calls: N,
  baseUsPerCall: +base.toFixed(3),
  instrumentedUsPerCall: +withHistogram.toFixed(3),
  addedUsPerCall: +(withHistogram - base).toFixed(3),
}));
