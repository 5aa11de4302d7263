// CORS (corsOrigins, MQ_CORS_ORIGINS): preflights answered before authentication, only
// listed origins allowed, credentials never, refusals readable by the allowed page.
import assert from "node:assert/strict";
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import { CORS_ORIGINS } from "../runtime/protocol/limits.ts";
import { ConfigError } from "../runtime/protocol/setting.ts";
import { createApp } from "./app.ts";
import { TEST_LIMITS } from "./testing.ts";

const KEY = "cors-test-key-0123456789";
const ALLOWED = "http://app.example.test:8443";

const broker = {
  produce: (topic: string) =>
    Promise.resolve({
      messageId: "X",
      topic,
      queueId: 0,
      queueOffset: 0,
      commitLogOffset: 0,
      storeTimestamp: 1,
      durability: "WRITTEN",
    }),
} as unknown as BrokerClient;

function app(corsOrigins?: string[]) {
  return createApp({
    broker: { get: () => Promise.resolve(broker), failed: () => {} },
    apiKeys: [{ key: KEY, name: "page", publish: ["*"] }],
    limits: TEST_LIMITS,
    log: () => {},
    corsOrigins,
  });
}

const preflight = (origin: string) => ({
  method: "OPTIONS",
  headers: {
    origin,
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type, mq-tag",
  },
});

Deno.test("a listed origin's preflight is answered without an API key, never with credentials", async () => {
  const a = await app([ALLOWED]);
  const res = await a.request("/v1/topics/t/messages", preflight(ALLOWED));
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("access-control-allow-origin"), ALLOWED);
  assert.match(res.headers.get("access-control-allow-methods") ?? "", /POST/);
  assert.equal(
    res.headers.get("access-control-allow-headers"),
    "authorization,content-type,mq-tag",
  );
  assert.equal(res.headers.get("access-control-allow-credentials"), null);
  const other = await a.request("/v1/topics/t/messages", preflight("http://evil.test"));
  assert.equal(other.headers.get("access-control-allow-origin"), null);
});

Deno.test("answers, refusals included, carry the allowed origin; others get none", async () => {
  const a = await app([ALLOWED]);
  const send = (origin: string, key = KEY) =>
    a.request("/v1/topics/t/messages", {
      method: "POST",
      headers: { origin, authorization: `Bearer ${key}`, "content-type": "text/plain" },
      body: "hi",
    });
  const ok = await send(ALLOWED);
  assert.equal(ok.status, 201);
  assert.equal(ok.headers.get("access-control-allow-origin"), ALLOWED);
  const refused = await send(ALLOWED, "wrong-key-0123456789abc");
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("access-control-allow-origin"), ALLOWED);
  const other = await send("http://evil.test");
  assert.equal(other.headers.get("access-control-allow-origin"), null);
});

Deno.test("no corsOrigins (the default): no CORS headers, no preflight answer", async () => {
  const a = await app();
  const res = await a.request("/v1/topics/t/messages", preflight(ALLOWED));
  assert.equal(res.headers.get("access-control-allow-origin"), null);
  assert.notEqual(res.status, 204);
  assert.deepEqual(CORS_ORIGINS.default, []);
});

Deno.test("MQ_CORS_ORIGINS takes origins or *, and refuses paths and other schemes", () => {
  assert.deepEqual(CORS_ORIGINS.fromText(" http://a.test, https://b.test:8443 "), [
    "http://a.test",
    "https://b.test:8443",
  ]);
  assert.deepEqual(CORS_ORIGINS.fromText("*"), ["*"]);
  for (const bad of ["http://a.test/app", "ftp://a.test", "a.test"]) {
    assert.throws(() => CORS_ORIGINS.fromText(bad), ConfigError, bad);
  }
});
