import assert from "node:assert/strict";
import { instrumentFetch } from "./http_metrics.ts";

const URL_ = "http://127.0.0.1:1/v1/topics/t/messages?x=1";
const count = (lines: string[], family: string, code: string) =>
  lines.find((l) =>
    l.startsWith("mq_http_request_duration_seconds_count") && l.includes(`family="${family}"`) &&
    l.includes(`code="${code}"`)
  )?.split(" ").at(-1);

Deno.test("instrumentFetch times sync answers, promised answers, rejections and throws", async () => {
  let now = 0;
  const answers: Array<() => Response | Promise<Response>> = [
    () => new Response("a", { status: 201 }),
    () => Promise.resolve(new Response("b", { status: 404 })),
    () => Promise.reject(new Error("boom")),
    () => {
      throw new Error("sync boom");
    },
  ];
  let next = 0;
  const m = instrumentFetch(() => answers[next++](), () => now += 2);
  assert.equal((await m.fetch(new Request(URL_, { method: "POST" }))).status, 201);
  assert.equal((await m.fetch(new Request(URL_, { method: "POST" }))).status, 404);
  await assert.rejects(async () => await m.fetch(new Request(URL_, { method: "POST" })), /boom/);
  assert.throws(() => m.fetch(new Request(URL_, { method: "POST" })), /sync boom/);
  await Promise.resolve(); // side reactions settle
  const lines = m.lines();
  assert.equal(count(lines, "produce", "2xx"), "1");
  assert.equal(count(lines, "produce", "4xx"), "1");
  assert.equal(count(lines, "produce", "5xx"), "2");
  assert.equal(
    lines.find((l) => l.startsWith("mq_http_request_duration_seconds_sum") && l.includes("2xx")),
    'mq_http_request_duration_seconds_sum{family="produce",code="2xx"} 0.002',
  );
});

Deno.test("instrumentFetch: a metrics failure loses the figure, never the request", async () => {
  let calls = 0;
  const clock = () => {
    if (++calls % 2 === 0) throw new Error("clock broke");
    return 0;
  };
  const m = instrumentFetch(() => Promise.resolve(new Response("ok")), clock);
  assert.equal((await m.fetch(new Request(URL_))).status, 200);
  const sync = instrumentFetch(() => new Response("ok", { status: 202 }), clock);
  assert.equal((sync.fetch(new Request(URL_)) as Response).status, 202);
  await new Promise((r) => setTimeout(r, 0)); // an unhandled rejection would fail the test here
});
