// The webhook receiver of bench/webhook/push_bench.ts: a hello-world HTTP endpoint on the
// runtime's own server (Deno.serve / Bun.serve), a child process of the bench. Same file on
// Deno and Bun. Prints {"event":"listening","url":...} on stdout once it listens.
//
// Every POST (any path but the control ones below) is answered 200 "ok" after the body is
// read. For each one it records, on its own clock `performance.timeOrigin +
// performance.now()` (comparable across processes on one machine):
//   - the webhook-id header, in arrival order (duplicates kept), and the distinct count;
//   - when the body starts with "t=<ms>;" (a send time on the same clock): arrival - t;
//   - when an mq-born-timestamp header is present (the broker's Date.now() at accept):
//     Date.now() - it.
// The load client sends the same header and body shape, so the baseline requests and the
// pushed ones cost the receiver the same work.
//
// Control (GET, never counted): /_stats (counters, JSON), /_ids (the ids, JSON array),
// /_latencies (the samples, JSON: sendToArrival[i] is the latency of the request sent at
// sentAt[i]); POST /_reset forgets everything.
import process from "node:process";

const now = () => performance.timeOrigin + performance.now();
const T0 = "t".charCodeAt(0), EQ = "=".charCodeAt(0), SEMI = ";".charCodeAt(0);

let requests = 0;
let ids: string[] = [];
let distinct = new Set<string>();
let firstAt = 0;
let lastAt = 0;
let lastNewAt = 0;
let sendToArrival: number[] = [];
let sentAt: number[] = [];
let bornToArrival: number[] = [];

/** The send time of a body that starts with "t=<ms>;", else NaN. */
function sendTime(body: Uint8Array): number {
  if (body.length < 4 || body[0] !== T0 || body[1] !== EQ) return NaN;
  const end = body.indexOf(SEMI, 2);
  if (end < 0 || end > 40) return NaN;
  let text = "";
  for (let i = 2; i < end; i++) text += String.fromCharCode(body[i]);
  return Number(text);
}

const json = (value: unknown) =>
  new Response(JSON.stringify(value), { headers: { "content-type": "application/json" } });

async function handle(req: Request): Promise<Response> {
  const at = now();
  if (req.method === "GET") {
    const path = new URL(req.url).pathname;
    if (path === "/_stats") {
      return json({ requests, distinct: distinct.size, firstAt, lastAt, lastNewAt });
    }
    if (path === "/_ids") return json(ids);
    if (path === "/_latencies") return json({ sendToArrival, sentAt, bornToArrival });
    return new Response("not found", { status: 404 });
  }
  if (req.method === "POST" && req.url.endsWith("/_reset")) {
    requests = 0;
    ids = [];
    distinct = new Set();
    firstAt = lastAt = lastNewAt = 0;
    sendToArrival = [];
    sentAt = [];
    bornToArrival = [];
    return json({ ok: true });
  }
  const body = new Uint8Array(await req.arrayBuffer());
  requests++;
  if (firstAt === 0) firstAt = at;
  lastAt = at;
  const id = req.headers.get("webhook-id");
  if (id !== null) {
    ids.push(id);
    if (!distinct.has(id)) {
      distinct.add(id);
      lastNewAt = at;
    }
  }
  const sent = sendTime(body);
  if (!Number.isNaN(sent)) {
    sendToArrival.push(at - sent);
    sentAt.push(sent);
  }
  const born = req.headers.get("mq-born-timestamp");
  if (born !== null) bornToArrival.push(Date.now() - Number(born));
  return new Response("ok");
}

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
if (g.Deno) {
  g.Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: (a: { port: number }) => ready(a.port) },
    handle,
  );
} else {
  const s = g.Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle, idleTimeout: 60 });
  ready(s.port);
}
function ready(port: number) {
  process.stdout.write(
    JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}`, pid: process.pid }) +
      "\n",
  );
}
