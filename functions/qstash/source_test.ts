// The QStash front end finds its QstashApi per request through the broker resolver, as the
// other routes do: after a failover (the resolver answers another broker) /v2 and
// /v1/qstash answer from the new one, and a NOT_LEADER refusal drops the stale route.
import assert from "node:assert/strict";
import type { BrokerClient, QstashApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { createApp } from "../app.ts";
import { TEST_LIMITS } from "../testing.ts";

const ADMIN = "a".repeat(20);
const READER = "r".repeat(20);

function qstashOf(current: string): QstashApi {
  const no = () => Promise.reject(new Error("not in this test"));
  return {
    qstashSigningKeys: () =>
      current === "down"
        ? Promise.reject(new BrokerError("NOT_LEADER", "not the leader"))
        : Promise.resolve({ current, next: `${current}-next` }),
    rotateQstashSigningKeys: no,
    setQstashSigningKeys: no,
    checkDestination: (url) =>
      url.includes("10.0.0.1")
        ? Promise.reject(new BrokerError("WEBHOOK_URL_REFUSED", "refused"))
        : Promise.resolve(),
    qstashSettings: no,
    listDeadLetters: () => Promise.resolve([]),
    retryDeadLetters: no,
    deleteDeadLetters: (_g, ids) => Promise.resolve(ids.length),
    qstashSchedule: no,
  };
}

Deno.test("QStash calls follow the resolver per request; NOT_LEADER drops the route", async () => {
  const brokers = ["sig_one", "down", "sig_two"].map((name) => ({ name }));
  let at = 0;
  const dropped: unknown[] = [];
  const app = await createApp({
    broker: {
      get: () => Promise.resolve(brokers[at] as unknown as BrokerClient),
      failed: (b) => void dropped.push(b),
    },
    apiKeys: [
      { key: ADMIN, name: "admin", admin: true },
      { key: READER, name: "reader", subscribe: ["*"] },
    ],
    limits: TEST_LIMITS,
    log: () => {},
    qstash: (b) => qstashOf((b as unknown as { name: string }).name),
  });
  const get = (path: string, key = ADMIN) =>
    app.request(path, { headers: { authorization: `Bearer ${key}` } });

  assert.deepEqual(await (await get("/v2/keys")).json(), {
    current: "sig_one",
    next: "sig_one-next",
  });
  at = 1;
  const down = await get("/v1/qstash/keys");
  assert.equal(down.status, 503);
  assert.deepEqual(dropped, [brokers[1]]);
  at = 2;
  assert.equal((await (await get("/v1/qstash/keys")).json()).current, "sig_two");
  assert.equal((await (await get("/v2/keys")).json()).current, "sig_two");

  // The plumbing routes are admin-only and refuse as problem+json.
  assert.equal((await get("/v1/qstash/keys", READER)).status, 403);
  const check = (url: string) =>
    app.request("/v1/qstash/destination-checks", {
      method: "POST",
      body: JSON.stringify({ url }),
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    });
  assert.equal((await check("http://127.0.0.1/x")).status, 204);
  const refused = await check("http://10.0.0.1/x");
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).code, "WEBHOOK_URL_REFUSED");
  const deleted = await app.request("/v1/qstash/dlq/qstash-q-a/delete", {
    method: "POST",
    body: JSON.stringify({ messageIds: ["m1", "m2"] }),
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.deepEqual(await deleted.json(), { deleted: 2 });
  assert.deepEqual(await (await get("/v1/qstash/dlq/qstash-q-a")).json(), { messages: [] });
});
