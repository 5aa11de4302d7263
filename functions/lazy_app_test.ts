// createApp({ lazy: true }) (what the entry files serve: zod and the route families load on
// the first request its own routes do not answer) answers every request exactly as the app
// that mounts every family at once: same status, headers that matter and body, with and
// without API keys, for routes of the eager families, of the lazy ones, unknown routes, HEAD
// and the OpenAPI document.
import assert from "node:assert/strict";
import type { BrokerClient, QstashApi } from "../runtime/protocol/core_api.ts";
import type { TopicConfig } from "../runtime/protocol/types.ts";
import { TEST_LIMITS } from "./testing.ts";
import { createApp } from "./app.ts";

const ADMIN = "a".repeat(24);
const PUBLISHER = "p".repeat(24);
const KEYS = [
  { key: ADMIN, name: "admin", admin: true },
  { key: PUBLISHER, name: "publisher", publish: ["orders"] },
];

const topic = (name: string) => ({ name, readQueueNums: 4, writeQueueNums: 4 }) as TopicConfig;

function broker(): BrokerClient {
  const fail = () => Promise.reject(new Error("not in this test"));
  const known: Partial<BrokerClient> = {
    listTopics: () => Promise.resolve([topic("orders"), topic("audit")]),
    getTopic: (name) => Promise.resolve(topic(name)),
    produce: (t) =>
      Promise.resolve({
        messageId: "X",
        topic: t,
        queueId: 0,
        queueOffset: 0,
        commitLogOffset: 0,
        storeTimestamp: 1,
        durability: "WRITTEN",
      }),
  };
  return new Proxy(known, {
    get: (t, k) => k === "then" ? undefined : (t as Record<string, unknown>)[k as string] ?? fail,
  }) as BrokerClient;
}

function build(lazy: boolean, apiKeys: typeof KEYS) {
  const b = broker();
  return createApp({
    broker: { get: () => Promise.resolve(b), failed: () => {} },
    apiKeys,
    limits: TEST_LIMITS,
    log: () => {},
    qstash: () => ({}) as QstashApi,
    corsOrigins: ["https://example.test"],
    lazy,
  });
}

const REQUESTS: [string, string, Record<string, string>?, string?][] = [
  ["GET", "/v1/topics"],
  ["GET", "/v1/topics/orders"],
  ["POST", "/v1/topics/orders/messages", {}, "hello"],
  ["GET", "/v1/groups/g1/offsets"],
  ["GET", "/v1/nope"],
  ["GET", "/nope"],
  ["HEAD", "/v1/topics"],
  ["GET", "/healthz"],
  ["GET", "/dashboard"],
  ["GET", "/v2/messages/x"],
  ["OPTIONS", "/v1/topics", {
    origin: "https://example.test",
    "access-control-request-method": "GET",
  }],
  ["PUT", "/v1/topics/orders/messages", {}, "x"],
  ["POST", "/v1/topics/orders/messages/batch", { "content-type": "application/json" }, "{}"],
  ["GET", "/healthz/"],
  ["GET", "/openapi.json"],
  // After the full app took over: produce and health again.
  ["POST", "/v1/topics/orders/messages?x=1", {}, "again"],
  ["GET", "/readyz"],
];

/** The answers to REQUESTS in order, on one app, or (`fresh`) each as the first request of a
 * new app: a lazy app answers some itself before its first hand-over, all after it. */
async function answers(lazy: boolean, keys: typeof KEYS, auth?: string, fresh = false) {
  let app = await build(lazy, keys);
  const out: unknown[] = [];
  for (const [method, path, headers = {}, body] of REQUESTS) {
    if (fresh) app = await build(lazy, keys);
    const res = await app.request(path, {
      method,
      body,
      headers: { ...headers, ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    });
    const text = await res.text();
    out.push({
      request: `${method} ${path}`,
      status: res.status,
      type: res.headers.get("content-type"),
      cors: res.headers.get("access-control-allow-origin"),
      vary: res.headers.get("vary"),
      allow: res.headers.get("access-control-allow-methods"),
      body: text && res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
    });
  }
  return out;
}

for (
  const [name, keys, auth] of [
    ["an open API", [], undefined],
    ["no key", KEYS, undefined],
    ["an admin key", KEYS, ADMIN],
    ["a publish-only key", KEYS, PUBLISHER],
  ] as const
) {
  Deno.test(`a lazy app answers as an eager one: ${name}`, async () => {
    const eager = await answers(false, [...keys], auth);
    const lazy = await answers(true, [...keys], auth);
    assert.deepEqual(lazy, eager);
    assert.deepEqual(await answers(true, [...keys], auth, true), eager);
    // The requests reach the lazy families (not refused before they are asked).
    if (auth === ADMIN) {
      assert.equal((lazy[0] as { status: number }).status, 200);
      assert.equal((lazy[4] as { status: number }).status, 404);
    }
  });
}

Deno.test("a lazy app serves only health, metrics and the single produce until a request needs more", async () => {
  const app = await build(true, KEYS);
  const paths = new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => r.path));
  assert.ok(paths.has("/v1/topics/:topic/messages"));
  assert.ok(paths.has("/healthz"));
  assert.ok(!paths.has("/v1/topics"), "the topic routes are lazy");
  assert.ok(!paths.has("/dashboard"), "the dashboard is lazy");
  const res = await app.request("/v1/topics", { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /"orders".*"audit"/);
});
