// Baseline for bench/http/produce_bench.ts: a hello-world Hono POST handler on the same
// runtime, reading the body and answering 201 JSON, served the way the broker serves.
import process from "node:process";
import { Hono } from "hono";

const app = new Hono();
app.post("/v1/topics/:topic/messages", async (c) => {
  const body = new Uint8Array(await c.req.arrayBuffer());
  return c.json({ ok: true, bytes: body.length, topic: c.req.param("topic") }, 201);
});

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
if (g.Deno) {
  g.Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: (a: { port: number }) => ready(a.port) },
    app.fetch,
  );
} else {
  const s = g.Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch, idleTimeout: 60 });
  ready(s.port);
}
function ready(port: number) {
  process.stdout.write(
    JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}` }) + "\n",
  );
}
