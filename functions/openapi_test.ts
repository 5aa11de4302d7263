import assert from "node:assert/strict";
import SwaggerParser from "@apidevtools/swagger-parser";
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import type { HaApi } from "../runtime/protocol/ha_api.ts";
import { TEST_LIMITS } from "./testing.ts";
import { createApp } from "./app.ts";

const ha: HaApi = {
  status: () => {
    throw new Error("not in this test");
  },
  metadataSnapshot: () => Promise.reject(new Error("not in this test")),
};

// With the HA and QStash routes and API keys: every route there is.
async function fullApp() {
  return await createApp({
    broker: { get: () => Promise.reject(new Error("no broker")), failed: () => {} },
    apiKeys: [{ key: "k".repeat(20), name: "admin", admin: true }],
    limits: TEST_LIMITS,
    log: () => {},
    ha,
    qstash: () => {
      throw new Error("not in this test");
    },
  });
}

type Operation = {
  operationId?: string;
  tags?: string[];
  summary?: string;
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
};

async function served() {
  const app = await fullApp();
  const res = await app.request("/openapi.json");
  assert.equal(res.status, 200);
  const doc = await res.json();
  // /v2 is QStash's API with QStash's shapes (docs/qstash.md), not in this document.
  const routes = new Set(
    app.routes.filter((r) => r.method !== "ALL" && !r.path.startsWith("/v2/")).map((r) =>
      `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`
    ),
  );
  const operations = new Map<string, Operation>();
  for (
    const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)
  ) {
    for (const [method, op] of Object.entries(item)) {
      operations.set(`${method.toUpperCase()} ${path}`, op);
    }
  }
  return { doc, routes, operations };
}

Deno.test("/openapi.json is a valid OpenAPI 3.1 document (swagger-parser)", async () => {
  const { doc } = await served();
  assert.equal(doc.openapi, "3.1.0");
  // validate() dereferences in place: give it a copy, and it throws on the first error.
  const checked = await SwaggerParser.validate(structuredClone(doc));
  assert.equal(checked.info.title, "edgemq");
});

Deno.test("/openapi.json documents exactly the routes the app serves, HA routes included", async () => {
  const { routes, operations } = await served();
  assert.deepEqual([...operations.keys()].sort(), [...routes].sort());
  assert.ok(routes.has("GET /v1/ha/status"));
  assert.ok(routes.has("GET /v1/internal/ha/metadata"));
  assert.ok(routes.has("POST /v1/qstash/dlq/{group}/retry"));
  assert.ok(routes.has("POST /v1/topics/{topic}/messages"));
});

Deno.test("every operation has a unique operationId, tags, a summary and real response schemas", async () => {
  const { doc, operations } = await served();
  const ids = new Set<string>();
  for (const [name, op] of operations) {
    assert.match(op.operationId ?? "", /^[a-z][A-Za-z0-9]+$/, `${name}: operationId`);
    assert.ok(!ids.has(op.operationId!), `${name}: operationId ${op.operationId} is taken`);
    ids.add(op.operationId!);
    assert.ok((op.tags ?? []).length > 0, `${name}: tags`);
    assert.ok((op.summary ?? "").length > 0, `${name}: summary`);
    const statuses = Object.keys(op.responses);
    assert.ok(statuses.some((s) => s.startsWith("2")), `${name}: a success response`);
    for (const [status, response] of Object.entries(op.responses)) {
      if (status === "204") {
        assert.equal(response.content, undefined, `${name} ${status}: no body`);
        continue;
      }
      const media = Object.entries(response.content ?? {});
      assert.ok(media.length > 0, `${name} ${status}: content`);
      for (const [type, { schema }] of media) {
        assert.ok(nonTrivial(doc, schema), `${name} ${status} ${type}: ${JSON.stringify(schema)}`);
        if (type === "application/problem+json") {
          assert.equal(schema!.$ref, "#/components/schemas/Problem", `${name} ${status}`);
        }
      }
    }
  }
  assert.equal(ids.size, operations.size);
});

/** A schema that says something: a $ref to one that does, properties, items or a type
 * other than a bare object. */
function nonTrivial(doc: { components: { schemas: Record<string, unknown> } }, schema: unknown) {
  let s = schema as Record<string, unknown> | undefined;
  const ref = s?.$ref as string | undefined;
  if (ref) s = doc.components.schemas[ref.replace("#/components/schemas/", "")] as typeof s;
  if (!s || Object.keys(s).length === 0) return false;
  if (s.anyOf || s.oneOf || s.items || s.$ref) return true;
  if (s.type === "object") {
    return Object.keys((s.properties ?? {}) as object).length > 0 ||
      s.additionalProperties !== undefined;
  }
  return typeof s.type === "string";
}

Deno.test("the document's request schemas are the ones that validate: an unknown field is refused", async () => {
  const app = await fullApp();
  const doc = await (await app.request("/openapi.json")).json();
  const upsert = doc.components.schemas.TopicUpsert;
  assert.equal(upsert.additionalProperties, false);
  const res = await app.request("/v1/topics/T", {
    method: "PUT",
    body: JSON.stringify({ colour: "red" }),
    headers: { authorization: `Bearer ${"k".repeat(20)}` },
  });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), {
    type: "/problems/invalid-parameter",
    title: "Invalid parameter",
    status: 400,
    detail: "Unknown topic setting colour",
    code: "INVALID_PARAMETER",
  });
});

Deno.test("HA: status is open, the metadata snapshot needs an admin key", async () => {
  const snapshot = new TextEncoder().encode('{"topics":[]}');
  const app = await createApp({
    broker: { get: () => Promise.resolve({} as BrokerClient), failed: () => {} },
    apiKeys: [
      { key: "a".repeat(20), name: "admin", admin: true },
      { key: "r".repeat(20), name: "reader", subscribe: ["*"] },
    ],
    limits: TEST_LIMITS,
    log: () => {},
    ha: {
      status: () => ({
        role: "master",
        brokerId: 0,
        brokerGroup: "b",
        epoch: 3,
        maxOffset: 10,
        master: null,
      }),
      metadataSnapshot: () => Promise.resolve(snapshot),
    },
  });
  const status = await app.request("/v1/ha/status");
  assert.equal(status.status, 200);
  assert.equal((await status.json()).epoch, 3);
  const path = "/v1/internal/ha/metadata";
  assert.equal((await app.request(path)).status, 401);
  const reader = await app.request(path, {
    headers: { authorization: `Bearer ${"r".repeat(20)}` },
  });
  assert.equal(reader.status, 403);
  assert.equal((await reader.json()).type, "/problems/forbidden");
  const admin = await app.request(path, { headers: { authorization: `Bearer ${"a".repeat(20)}` } });
  assert.equal(admin.status, 200);
  assert.equal(admin.headers.get("content-type"), "application/json");
  assert.equal(await admin.text(), '{"topics":[]}');
});

Deno.test("HA routes are absent without an HA node", async () => {
  const app = await createApp({
    broker: { get: () => Promise.reject(new Error("no broker")), failed: () => {} },
    apiKeys: [],
    limits: TEST_LIMITS,
    log: () => {},
  });
  const res = await app.request("/v1/ha/status");
  assert.equal(res.status, 404);
  assert.equal((await res.json()).type, "/problems/not-found");
});
