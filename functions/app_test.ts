import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import assert from "node:assert/strict";
import { TEST_LIMITS } from "./testing.ts";
import { createApp, openApiDocument } from "./app.ts";
import type { ProduceResult } from "../runtime/protocol/types.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";

/** What a fake broker's produce answers for `topic`. */
function produced(topic: string): ProduceResult {
  return {
    messageId: "X",
    topic,
    queueId: 0,
    queueOffset: 0,
    commitLogOffset: 0,
    storeTimestamp: 1,
    durability: "WRITTEN",
  };
}

function fakeBroker(overrides: Partial<BrokerClient> = {}): BrokerClient {
  const fail = () => Promise.reject(new Error("not in this test"));
  // "then" stays undefined: the proxy must not look like a promise.
  return new Proxy(overrides, {
    get: (t, k) => k === "then" ? undefined : (t as Record<string, unknown>)[k as string] ?? fail,
  }) as BrokerClient;
}

async function app(
  broker: BrokerClient,
  apiKeys = [] as { key: string; name: string; publish?: string[]; admin?: boolean }[],
) {
  return await createApp({
    broker: { get: () => Promise.resolve(broker), failed: () => {} },
    apiKeys,
    limits: TEST_LIMITS,
    log: () => {},
  });
}

Deno.test("openapi.json lists exactly the routes the app has", async () => {
  const a = await app(fakeBroker());
  const routes = new Set(
    a.routes.filter((r) => r.method !== "ALL").map((r) =>
      `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`
    ),
  );
  const documented = new Set<string>();
  for (
    const [path, item] of Object.entries(
      openApiDocument(a).paths as Record<string, Record<string, unknown>>,
    )
  ) {
    for (const method of Object.keys(item)) {
      if (method !== "parameters") documented.add(`${method.toUpperCase()} ${path}`);
    }
  }
  assert.deepEqual([...documented].sort(), [...routes].sort());
  const res = await a.request("/openapi.json");
  assert.equal((await res.json()).openapi, "3.1.0");
});

Deno.test("produce passes headers to the broker as a ProduceMessage", async () => {
  let seen: unknown;
  const a = await app(fakeBroker({
    produce: (topic, m) => {
      seen = { topic, ...m, body: new TextDecoder().decode(m.body) };
      return Promise.resolve(produced(topic));
    },
  }));
  const res = await a.request("/v1/topics/T/messages", {
    method: "POST",
    body: "hello",
    headers: {
      "mq-tag": "A",
      "mq-keys": "k1  k2",
      "mq-sharding-key": "s",
      "mq-prop-color": "red",
      "content-type": "text/plain",
      "idempotency-key": "i1",
      "mq-message-id": "C0A8000100002A9F0000000000000001",
    },
  });
  assert.equal(res.status, 201);
  assert.deepEqual(seen, {
    topic: "T",
    body: "hello",
    tag: "A",
    keys: ["k1", "k2"],
    shardingKey: "s",
    contentType: "text/plain",
    idempotencyKey: "i1",
    messageId: "C0A8000100002A9F0000000000000001",
    properties: { color: "red" },
  });
});

Deno.test("a broker refusal is rendered as problem+json with its stable type", async () => {
  const a = await app(
    fakeBroker({
      getTopic: () => Promise.reject(new BrokerError("TOPIC_NOT_FOUND", "No topic Q")),
    }),
  );
  const res = await a.request("/v1/topics/Q");
  assert.equal(res.status, 404);
  assert.equal(res.headers.get("content-type"), "application/problem+json");
  assert.deepEqual(await res.json(), {
    type: "/problems/topic-not-found",
    title: "No such topic",
    status: 404,
    detail: "No topic Q",
    code: "TOPIC_NOT_FOUND",
  });
});

Deno.test("an unexpected error is a 500 that leaks nothing", async () => {
  const a = await app(
    fakeBroker({ listTopics: () => Promise.reject(new Error("secret path /etc/x")) }),
  );
  const res = await a.request("/v1/topics");
  assert.equal(res.status, 500);
  const body = await res.text();
  assert.ok(!body.includes("secret"));
  assert.equal(JSON.parse(body).type, "/problems/internal");
});

Deno.test("publish rights are per topic pattern", async () => {
  const a = await app(fakeBroker({ produce: () => Promise.resolve(produced("orders-eu")) }), [{
    key: "k".repeat(20),
    name: "shop",
    publish: ["orders-*"],
  }]);
  const send = (topic: string) =>
    a.request(`/v1/topics/${topic}/messages`, {
      method: "POST",
      body: "x",
      headers: { authorization: `Bearer ${"k".repeat(20)}` },
    });
  assert.equal((await send("orders-eu")).status, 201);
  assert.equal((await send("payments")).status, 403);
});

Deno.test("produce: a replay is 200 with Idempotent-Replayed; NOT_LEADER tells the resolver", async () => {
  const stored = produced("T");
  let replay = true;
  const broker = fakeBroker({
    produce: () =>
      replay
        ? Promise.resolve({ ...stored, idempotentReplay: true })
        : Promise.reject(new BrokerError("NOT_LEADER", "Cannot write: not the leader")),
  });
  const told: unknown[] = [];
  const a = await createApp({
    broker: { get: () => Promise.resolve(broker), failed: (b, err) => told.push(b, err) },
    apiKeys: [],
    limits: TEST_LIMITS,
    log: () => {},
  });
  const send = () => a.request("/v1/topics/T/messages", { method: "POST", body: "x" });
  const first = await send();
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("idempotent-replayed"), "true");
  assert.equal((await first.json()).idempotentReplay, true);
  assert.deepEqual(told, []);
  replay = false;
  const refused = await send();
  assert.equal(refused.status, 503);
  assert.equal((await refused.json()).code, "NOT_LEADER");
  assert.equal(told.length, 2);
  assert.equal(told[0], broker);
  assert.equal((told[1] as BrokerError).code, "NOT_LEADER");
});

Deno.test("pull and receive hand the broker a getter for the client's signal, read only by the broker", async () => {
  const seen: unknown[] = [];
  const a = await app(fakeBroker({
    pull: (_topic, _queueId, _request, signal) => {
      seen.push(signal);
      return Promise.resolve({
        status: "NO_NEW_MESSAGE",
        messages: [],
        nextOffset: 0,
        minOffset: 0,
        maxOffset: 0,
      });
    },
    receive: (_group, _options, signal) => {
      seen.push(signal);
      return Promise.resolve([]);
    },
  }));
  const controllers = [new AbortController(), new AbortController()];
  const pulled = await a.request("/v1/topics/t/queues/0/messages?offset=0&waitMs=100", {
    signal: controllers[0].signal,
  });
  assert.equal(pulled.status, 200);
  const received = await a.request("/v1/groups/g/receive", {
    method: "POST",
    body: JSON.stringify({ topic: "t", waitMs: 100 }),
    headers: { "content-type": "application/json" },
    signal: controllers[1].signal,
  });
  assert.equal(received.status, 200);
  assert.equal(seen.length, 2);
  for (const [i, source] of seen.entries()) {
    assert.equal(typeof source, "function");
    const signal = (source as () => AbortSignal)();
    assert.equal(signal.aborted, false);
    controllers[i].abort();
    assert.equal(signal.aborted, true, "it is the request's own signal");
  }
});

Deno.test("a receive whose clientId is not text is refused, naming what clientId must be", async () => {
  const a = await app(fakeBroker());
  const res = await a.request("/v1/groups/g/receive", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ topic: "t", clientId: 5 }),
  });
  assert.equal(res.status, 400);
  const problem = await res.json();
  assert.equal(problem.type, "/problems/invalid-parameter");
  assert.match(problem.detail, /clientId must be 1-255 visible ASCII characters/);
});
