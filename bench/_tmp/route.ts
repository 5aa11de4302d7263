import { Hono } from "hono";
import { createApp, functionsLimits } from "../../functions/app.ts";
import { loadBrokerConfig } from "../../runtime/config.ts";
const config = loadBrokerConfig({}, { DATA_DIR: "/tmp/x", PORT: "0" }, []);
const result = { messageId: "0A0B0C0D0E0F10111213141516171819", topic: "bench", queueId: 3, queueOffset: 12345, commitLogOffset: 123456789, storeTimestamp: Date.now(), durability: "WRITTEN" };
const fake = { produce: () => Promise.resolve(result) } as any;
const app = await createApp({ broker: { get: () => Promise.resolve(fake), failed: () => {} }, apiKeys: [], limits: functionsLimits(config), log: () => {} });
const hello = new Hono();
hello.post("/v1/topics/:topic/messages", async (c) => { const got = new Uint8Array(await c.req.arrayBuffer()); return c.json({ ok: true, bytes: got.length, topic: c.req.param("topic") }, 201); });
const bare = new Hono();
bare.post("/v1/topics/:topic/messages", async (c) => { const got = new Uint8Array(await c.req.arrayBuffer()); return c.json(result, 201); });
const body = new Uint8Array(1024).fill(97);
const req = () => new Request("http://127.0.0.1/v1/topics/bench/messages", { method: "POST", body, headers: { "content-length": "1024", "content-type": "application/octet-stream" } });
async function run(f: () => Promise<Response> | Response, n: number) {
  const t = performance.now();
  for (let i = 0; i < n; i += 64) { const w = []; for (let j = 0; j < 64; j++) w.push(Promise.resolve(f()).then((r) => r.arrayBuffer())); await Promise.all(w); }
  return ((performance.now() - t) * 1000 / n);
}
const phases: Record<string, () => any> = { hello: () => hello.fetch(req()), bare: () => bare.fetch(req()), route: () => app.fetch(req()), reqonly: () => new Response("x") };
for (let r = 0; r < 4; r++) { const line = []; for (const [k, f] of Object.entries(phases)) line.push(`${k} ${(await run(f, 40000)).toFixed(2)}`); console.log(line.join("  ")); }
