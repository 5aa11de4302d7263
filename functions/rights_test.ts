// Every /v1 route × every kind of API key (issue #19, point 5): a publish-only key, a
// subscribe-only key, an admin key and no key, each against resources the key names and
// resources it does not. A route added without a row here fails the first test.
import assert from "node:assert/strict";
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import { TEST_LIMITS } from "./testing.ts";
import { createApp } from "./app.ts";

const KEY = { pub: "p".repeat(20), sub: "s".repeat(20), admin: "a".repeat(20) };
const API_KEYS = [
  { key: KEY.pub, name: "pub", publish: ["orders"] },
  { key: KEY.sub, name: "sub", subscribe: ["orders", "og"] },
  { key: KEY.admin, name: "admin", admin: true },
];
const ID = "0A000001000000000000000000000001";

/** Needed right; "list" answers 200 with only the items the key may see. */
type Need = "publish" | "subscribe" | "admin" | "see" | "list";
interface Row {
  route: string;
  need: Need;
  /** The request against topic `t`, group `g` and schedule `s` (whose topic is `t`). */
  request(t: string, g: string, s: string): { path: string; body?: unknown };
}

const row = (
  route: string,
  need: Need,
  request: Row["request"] = (t, g, s) => ({ path: fill(route, t, g, s) }),
): Row => ({ route, need, request });
const withBody = (route: string, need: Need, body: (t: string) => unknown) =>
  row(route, need, (t, g, s) => ({ path: fill(route, t, g, s), body: body(t) }));
const fill = (route: string, t: string, g: string, s: string) =>
  route.replace(/^\w+ /, "").replace("{topic}", t).replace("{group}", g).replace("{id}", s)
    .replace("{queueId}", "0").replace("{messageId}", ID).replace("{clientId}", "c1");

const ROWS: Row[] = [
  row("POST /v1/topics/{topic}/messages/batch", "publish", (t) => ({
    path: `/v1/topics/${t}/messages/batch`,
    body: { messages: [{ body: "x" }] },
  })),
  row("POST /v1/topics/{topic}/messages", "publish", (t) => ({
    path: `/v1/topics/${t}/messages`,
    body: "x",
  })),
  row("GET /v1/topics/{topic}/queues/{queueId}/messages", "subscribe", (t, g) => ({
    path: `/v1/topics/${t}/queues/0/messages?offset=0&group=${g}`,
  })),
  row("GET /v1/topics/{topic}/messages", "subscribe", (t) => ({
    path: `/v1/topics/${t}/messages?key=k`,
  })),
  row("GET /v1/messages/{messageId}", "subscribe", (t) => ({
    path: `/v1/messages/${ID}?topic=${t}`,
  })),
  row("GET /v1/topics", "list"),
  row("GET /v1/topics/{topic}", "see"),
  withBody("PUT /v1/topics/{topic}", "admin", () => ({})),
  row("DELETE /v1/topics/{topic}", "admin"),
  row("GET /v1/topics/{topic}/route", "see"),
  withBody("POST /v1/topics/{topic}/route/groups", "admin", () => ({ brokerGroup: "b" })),
  row("POST /v1/topics/{topic}/route/groups/{group}/drain", "admin"),
  row("DELETE /v1/topics/{topic}/route/groups/{group}", "admin"),
  withBody("PUT /v1/groups/{group}", "subscribe", () => ({})),
  row("GET /v1/groups/{group}", "subscribe"),
  withBody("POST /v1/groups/{group}/heartbeat", "subscribe", (t) => ({
    clientId: "c1",
    subscriptions: [{ topic: t }],
  })),
  row("DELETE /v1/groups/{group}/members/{clientId}", "subscribe"),
  row("GET /v1/groups/{group}/assignment", "subscribe", (t, g) => ({
    path: `/v1/groups/${g}/assignment?topic=${t}&clientId=c1`,
  })),
  ...["lock", "unlock"].map((a) =>
    withBody(`POST /v1/groups/{group}/${a}`, "subscribe", (t) => ({
      clientId: "c1",
      topic: t,
      queueIds: [0],
    }))
  ),
  row("GET /v1/groups/{group}/dlq", "subscribe"),
  withBody("POST /v1/groups/{group}/dlq/redrive", "admin", () => ({ messageIds: [ID] })),
  row("DELETE /v1/groups/{group}/dlq", "admin"),
  withBody("POST /v1/groups/{group}/receive", "subscribe", (t) => ({ topic: t })),
  withBody("POST /v1/groups/{group}/ack/batch", "subscribe", () => ({ receiptHandles: ["h"] })),
  withBody("POST /v1/groups/{group}/ack", "subscribe", () => ({ receiptHandle: "h" })),
  withBody("POST /v1/groups/{group}/nack", "subscribe", () => ({ receiptHandle: "h" })),
  withBody("POST /v1/groups/{group}/visibility", "subscribe", () => ({
    receiptHandle: "h",
    invisibleMs: 1000,
  })),
  row("GET /v1/groups/{group}/offsets/{topic}", "subscribe"),
  withBody("PUT /v1/groups/{group}/offsets/{topic}", "subscribe", () => ({ timestamp: 1 })),
  row("GET /v1/groups/{group}/offsets/{topic}/{queueId}", "subscribe"),
  withBody("PUT /v1/groups/{group}/offsets/{topic}/{queueId}", "subscribe", () => ({
    offset: 0,
  })),
  row("DELETE /v1/topics/{topic}/scheduled/{messageId}", "publish"),
  withBody("PUT /v1/topics/{topic}/scheduled/{messageId}", "publish", () => ({ deliverAt: 1 })),
  row("DELETE /v1/topics/{topic}/scheduled", "publish", (t) => ({
    path: `/v1/topics/${t}/scheduled?key=k`,
  })),
  withBody("POST /v1/schedules", "publish", (t) => ({
    topic: t,
    cron: "* * * * *",
    message: { body: "x" },
  })),
  row("GET /v1/schedules", "list"),
  row("GET /v1/schedules/{id}", "see"),
  withBody("POST /v1/schedules/{id}/pause", "publish", () => ({})),
  withBody("POST /v1/schedules/{id}/resume", "publish", () => ({})),
  row("DELETE /v1/schedules/{id}", "publish"),
  row("GET /v1/schedules/{id}/export", "admin"),
  withBody("PUT /v1/schedules/{id}", "admin", (t) => ({
    id: t,
    topic: t,
    cron: "* * * * *",
    message: { body: "x" },
    createdAt: 0,
    lastTickAt: null,
  })),
  withBody("PUT /v1/subscriptions/{group}", "admin", (t) => ({ topic: t, url: "https://x" })),
  row("GET /v1/subscriptions", "admin"),
  row("GET /v1/subscriptions/{group}", "subscribe"),
  row("DELETE /v1/subscriptions/{group}", "admin"),
  withBody("POST /v1/subscriptions/{group}/pause", "admin", () => ({})),
  withBody("POST /v1/subscriptions/{group}/resume", "admin", () => ({})),
  withBody("POST /v1/subscriptions/{group}/replay", "admin", () => ({ timestamp: 1 })),
  row("GET /v1/subscriptions/{group}/deliveries", "subscribe"),
  // Transactions: a transaction is authorized by its topic (the fake broker's transaction
  // `t` is on topic `t`); a producer group's name by the key's publish patterns.
  ...["commit", "rollback"].map((d) =>
    row(`POST /v1/transactions/{transactionId}/${d}`, "publish", (t) => ({
      path: `/v1/transactions/${t}/${d}`,
    }))
  ),
  row("GET /v1/transactions/{transactionId}", "publish", (t) => ({
    path: `/v1/transactions/${t}`,
  })),
  row("PUT /v1/producer-groups/{group}/transaction-check", "publish", (t) => ({
    path: `/v1/producer-groups/${t}/transaction-check`,
    body: { url: "https://x" },
  })),
  ...["GET", "DELETE"].map((m) =>
    row(`${m} /v1/producer-groups/{group}/transaction-check`, "publish", (t) => ({
      path: `/v1/producer-groups/${t}/transaction-check`,
    }))
  ),
  row("GET /v1/transaction-checks", "admin"),
  row("GET /v1/producer-groups/{group}/transaction-checks", "publish", (t) => ({
    path: `/v1/producer-groups/${t}/transaction-checks`,
  })),
  row("GET /v1/groups", "list"),
  row("GET /v1/groups/{group}/progress", "subscribe"),
  row("GET /v1/topics/{topic}/stats", "see"),
  row("GET /v1/topics/{topic}/drain-status", "admin"),
  row("GET /v1/cluster", "admin"),
];

/** A broker that knows topics `orders` and `secret`, one schedule on each (its id is its
 * topic's), and answers every other call with an empty object. */
function fakeBroker(): BrokerClient {
  const topic = (name: string) => ({
    name,
    readQueueNums: 8,
    writeQueueNums: 8,
    perm: 6,
    order: false,
  });
  const schedule = (id: string) => ({
    id,
    topic: id,
    cron: "* * * * *",
    timeZone: "UTC",
    paused: false,
    missedTicks: "skip",
    lastTickAt: null,
    nextTickAt: null,
  });
  const known: Record<string, (...args: unknown[]) => unknown> = {
    listTopics: () => [topic("orders"), topic("secret")],
    getTopic: (name) => topic(name as string),
    listSchedules: () => [schedule("orders"), schedule("secret")],
    getSchedule: (id) => schedule(id as string),
    exportSchedule: (id) => ({ ...schedule(id as string), message: { body: new Uint8Array(1) } }),
    getMessageById: (_id, t) => ({ topic: t }),
    receive: () => [],
    produceBatch: () => [{ ok: true }],
    lockQueues: () => [],
    cancelScheduledByKey: () => 0,
    getTransaction: (id) => ({ topic: id }),
    listGroups: () => [{ group: "og" }, { group: "sg" }],
    groupProgress: () => ({ topics: [{ topic: "orders" }, { topic: "secret" }] }),
  };
  return new Proxy({}, {
    get: (_t, k) =>
      k === "then"
        ? undefined
        : (...args: unknown[]) => Promise.resolve(known[k as string]?.(...args) ?? {}),
  }) as BrokerClient;
}

async function rightsApp() {
  return await createApp({
    broker: { get: () => Promise.resolve(fakeBroker()), failed: () => {} },
    apiKeys: API_KEYS,
    limits: TEST_LIMITS,
    log: () => {},
  });
}

type App = Awaited<ReturnType<typeof rightsApp>>;

async function send(app: App, r: Row, key: string | undefined, own: boolean) {
  const { path, body } = own
    ? r.request("orders", "og", "orders")
    : r.request("secret", "sg", "secret");
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await app.request(path, {
    method: r.route.split(" ")[0],
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.text() };
}

Deno.test("rights matrix: every /v1 route the app serves has a row", async () => {
  const app = await rightsApp();
  const served = app.routes
    .filter((r) => r.method !== "ALL" && r.path.startsWith("/v1/"))
    .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
  assert.deepEqual(ROWS.map((r) => r.route).sort(), [...new Set(served)].sort());
});

Deno.test("rights matrix: no key is 401, admin passes everywhere", async () => {
  const app = await rightsApp();
  for (const r of ROWS) {
    for (const own of [true, false]) {
      assert.equal((await send(app, r, undefined, own)).status, 401, r.route);
      const admin = await send(app, r, KEY.admin, own);
      assert.ok(admin.status < 300, `${r.route} as admin: ${admin.status} ${admin.body}`);
    }
  }
});

for (const who of ["pub", "sub"] as const) {
  Deno.test(`rights matrix: a ${who}-only key passes on its own names only`, async () => {
    const app = await rightsApp();
    const holds = (need: Need) =>
      need === "see" || need === "list" || need === (who === "pub" ? "publish" : "subscribe");
    for (const r of ROWS) {
      const own = await send(app, r, KEY[who], true);
      if (holds(r.need)) {
        assert.ok(own.status < 300, `${r.route} on own: ${own.status} ${own.body}`);
      } else assert.equal(own.status, 403, `${r.route} on own names`);
      const other = await send(app, r, KEY[who], false);
      if (r.need === "list") assert.equal(other.status, 200, r.route);
      else assert.equal(other.status, 403, `${r.route} on names the key lacks: ${other.body}`);
    }
  });
}

Deno.test("rights matrix: lists keep only what the key may see", async () => {
  const app = await rightsApp();
  const list = async (path: string, key: string) =>
    await (await app.request(path, { headers: { authorization: `Bearer ${key}` } })).json();
  for (const key of [KEY.pub, KEY.sub]) {
    assert.deepEqual(
      (await list("/v1/topics", key)).topics.map((t: { name: string }) => t.name),
      ["orders"],
    );
    assert.deepEqual(
      (await list("/v1/schedules", key)).schedules.map((s: { topic: string }) => s.topic),
      ["orders"],
    );
  }
  assert.deepEqual(
    (await list("/v1/groups", KEY.sub)).groups.map((g: { group: string }) => g.group),
    ["og"],
  );
  assert.deepEqual((await list("/v1/groups", KEY.pub)).groups, []);
  assert.deepEqual(
    (await list("/v1/groups/og/progress", KEY.sub)).topics.map((t: { topic: string }) => t.topic),
    ["orders"],
  );
  assert.equal((await list("/v1/topics", KEY.admin)).topics.length, 2);
  assert.equal((await list("/v1/schedules", KEY.admin)).schedules.length, 2);
});
