// Baseline for bench/http/produce_bench.ts: a hello-world Hono POST handler on the same
// runtime, reading the body the way the produce route must and answering 201 JSON, served
// the way the broker serves. "The way the produce route must": a body is bounded, so its
// Content-Length is checked against the limit before the body is read (functions/body.ts;
// Deno.serve has none of its own). On Deno the first look at a request's headers costs
// ~0.75-1.3 µs of CPU (it builds every header), which a baseline that never read a header
// did not pay (bench/README.md, "Produce path (issue #27, round 3)").
import process from "node:process";
import { Hono } from "hono";

/** The broker's default maxMessageSize (storage/config.ts). */
const BODY_BYTES_MAX = 4 * 1024 * 1024;

const app = new Hono();
// A client that closes mid-body (autocannon at the end of a run) is not worth a stack trace
// on stderr; the broker answers it with a typed error, quietly, too. Anything else is loud.
app.onError((err, c) => {
  if (err.name === "BadResource" || /body/i.test(err.message)) {
    return c.json({ error: "the request body could not be read" }, 400);
  }
  console.error(err);
  return c.json({ error: "internal error" }, 500);
});
app.post("/v1/topics/:topic/messages", async (c) => {
  const declared = c.req.header("content-length");
  if (declared === undefined || !(Number(declared) <= BODY_BYTES_MAX)) {
    return c.json({ error: "a Content-Length up to 4 MiB is required" }, 413);
  }
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
