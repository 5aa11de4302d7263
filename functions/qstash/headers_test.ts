import assert from "node:assert/strict";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { duration, parseQstashHeaders } from "./headers.ts";

const parse = (h: Record<string, string>, kind: "publish" | "schedule" = "publish") =>
  parseQstashHeaders(Object.entries(h), kind, 20);

function refused(h: Record<string, string>, mention: RegExp, kind?: "publish" | "schedule") {
  assert.throws(() => parse(h, kind), (e: unknown) => {
    assert.ok(e instanceof BrokerError);
    assert.equal(e.status, 400);
    assert.match(e.message, mention);
    return true;
  });
}

Deno.test("QStash headers: what the client sends is read", () => {
  const o = parse({
    "Content-Type": "application/json",
    "Upstash-Method": "POST",
    "Upstash-Delay": "1d10h30m",
    "Upstash-Retries": "5",
    "Upstash-Callback": "https://a.example/cb",
    "Upstash-Failure-Callback": "https://a.example/fcb",
    "Upstash-Deduplication-Id": "order-7",
    "Upstash-Forward-Authorization": "Bearer x",
    "upstash-forward-x-trace": "t1",
    "Upstash-Timeout": "30s",
    "Upstash-Flow-Control-Key": "user-1",
    "Upstash-Flow-Control-Value": "parallelism=2,rate=10, period=1m",
    "Upstash-Telemetry-Sdk": "upstash-qstash-js@2.12.0",
    "Authorization": "Bearer token",
  });
  assert.equal(o.contentType, "application/json");
  assert.equal(o.delayMs, ((24 + 10) * 60 + 30) * 60_000);
  assert.equal(o.retries, 5);
  assert.equal(o.callback, "https://a.example/cb");
  assert.equal(o.failureCallback, "https://a.example/fcb");
  assert.equal(o.deduplicationId, "order-7");
  assert.deepEqual(o.forward, { authorization: "Bearer x", "x-trace": "t1" });
  assert.equal(o.timeoutMs, 30_000);
  assert.deepEqual(o.flowControl, { key: "user-1", parallelism: 2, rate: 10, periodMs: 60_000 });
  assert.equal(parse({ "Upstash-Not-Before": "1767225600" }).notBefore, 1767225600_000);
  assert.equal(duration("Upstash-Delay", "45"), 45_000);
});

Deno.test("QStash headers: anything not carried out is a 400 naming the header", () => {
  refused({ "Upstash-Method": "HEAD" }, /Upstash-Method/);
  assert.equal(parse({ "Upstash-Method": "put" }).method, "PUT");
  assert.equal(parse({ "Upstash-Method": "POST" }).method, undefined);
  refused({ "Upstash-Retry-Delay": "1000" }, /Upstash-Retry-Delay/);
  refused({ "Upstash-Redact-Fields": "body" }, /Upstash-Redact-Fields/);
  refused({ "Upstash-Callback-Retries": "1" }, /Upstash-Callback-Retries/);
  refused({ "Upstash-Whatever": "1" }, /Upstash-Whatever/);
  refused({ "Upstash-Delay": "10 minutes" }, /Upstash-Delay/);
  refused({ "Upstash-Retries": "21" }, /Upstash-Retries/);
  refused({ "Upstash-Forward-Content-Length": "1" }, /Upstash-Forward-Content-Length/);
  refused({ "Upstash-Flow-Control-Value": "parallelism=1" }, /Flow-Control-Key/);
  refused({ "Upstash-Flow-Control-Key": "k", "Upstash-Flow-Control-Value": "speed=1" }, /speed/);
  refused({ "Upstash-Cron": "* * * * *" }, /Upstash-Cron/);
  refused({ "Upstash-Delay": "10s" }, /Upstash-Delay/, "schedule");
  refused({ "Upstash-Deduplication-Id": "x" }, /Upstash-Deduplication-Id/, "schedule");
  assert.equal(parse({ "Upstash-Cron": "0 * * * *" }, "schedule").cron, "0 * * * *");
});
