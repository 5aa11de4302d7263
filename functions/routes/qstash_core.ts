// The broker's QStash calls (QstashApi) as narrow admin routes under /v1/qstash, so the
// QStash front end (/v2) also runs where the broker is in another process: split-mode
// functions and Deploy reach them with functions/qstash/remote.ts. Not for applications:
// @upstash/qstash talks to /v2 (docs/qstash.md); these are the front end's own plumbing.
import { createRoute, z } from "@hono/zod-openapi";
import type { QstashApi } from "../../runtime/protocol/core_api.ts";
import { REDRIVE_IDS_MAX } from "../../runtime/protocol/limits.ts";
import { readJson } from "./json_body.ts";
import { group, groupParams, intText, text } from "./params.ts";
import {
  json,
  newRoutes,
  NO_CONTENT,
  REFUSALS,
  type RouteDeps,
  type Routes,
  serve,
} from "./route.ts";
import { Messages } from "./wire_schemas.ts";

const TAGS = ["qstash"];

const Keys = z.object({ current: z.string(), next: z.string() }).openapi("QstashSigningKeys");
const Settings = z.object({
  retriesDefault: z.int(),
  retriesMax: z.int(),
  retryBackoffMs: z.array(z.int()),
  concurrency: z.int(),
  timeoutMsMax: z.int(),
}).openapi("QstashSettings");
const Schedule = z.object({
  createdAt: z.int(),
  body: z.string().openapi({ description: "base64" }),
  contentType: z.string().optional(),
  properties: z.record(z.string(), z.string()),
}).openapi("QstashScheduleDetails");
const destination = z.object({ url: z.string() }).strict().openapi("QstashDestination");
const letterIds = z.object({
  messageIds: z.array(z.string()).max(REDRIVE_IDS_MAX),
}).strict().openapi("QstashLetterIds");
const ids = { field: "field", usage: () => `messageIds must list at most ${REDRIVE_IDS_MAX} ids` };

/** `deps.api` is unused: every call goes to `qstash`, found per request the same way. */
export function qstashCoreRoutes(deps: RouteDeps<unknown>, qstash: QstashApi): Routes {
  const { allow } = deps;
  const app = newRoutes();
  const route = (
    method: "get" | "post" | "put",
    path: string,
    operationId: string,
    summary: string,
    extra: Partial<Parameters<typeof createRoute>[0]>,
  ) =>
    createRoute({
      method,
      path: `/v1/qstash${path}`,
      operationId,
      tags: TAGS,
      summary,
      responses: REFUSALS,
      ...extra,
    });

  serve(
    app,
    route("get", "/keys", "qstashSigningKeys", "The QStash signing keys", {
      responses: { 200: json("Current and next", Keys), ...REFUSALS },
    }),
    async (c) => {
      allow(c, "admin");
      return c.json(await qstash.qstashSigningKeys());
    },
  );
  serve(
    app,
    route("post", "/keys/rotate", "rotateQstashSigningKeys", "Next becomes current; a new next", {
      responses: { 200: json("The new keys", Keys), ...REFUSALS },
    }),
    async (c) => {
      allow(c, "admin");
      return c.json(await qstash.rotateQstashSigningKeys());
    },
  );
  serve(
    app,
    route("put", "/keys", "setQstashSigningKeys", "Replace both keys (every group of a cluster)", {
      request: { body: { required: true, content: { "application/json": { schema: Keys } } } },
      responses: { 200: json("The keys", Keys), ...REFUSALS },
    }),
    async (c) => {
      allow(c, "admin");
      const keys = await readJson(c, deps, Keys.strict(), { field: "field" });
      return c.json(await qstash.setQstashSigningKeys(keys));
    },
  );
  serve(
    app,
    route("post", "/destination-checks", "checkQstashDestination", "Would deliveries go there?", {
      request: {
        body: { required: true, content: { "application/json": { schema: destination } } },
      },
      responses: { 204: NO_CONTENT, ...REFUSALS },
    }),
    async (c) => {
      allow(c, "admin");
      const { url } = await readJson(c, deps, destination, { field: "field" });
      await qstash.checkDestination(url);
      return c.body(null, 204);
    },
  );
  serve(
    app,
    route("get", "/settings", "qstashSettings", "The broker's QStash settings", {
      responses: { 200: json("Settings", Settings), ...REFUSALS },
    }),
    async (c) => {
      allow(c, "admin");
      return c.json(await qstash.qstashSettings());
    },
  );
  const listQuery = { max: intText("max") };
  serve(
    app,
    route("get", "/dlq/{group}", "listQstashDeadLetters", "Dead letters not deleted or retried", {
      request: { params: groupParams, query: z.object(listQuery) },
      responses: { 200: json("Oldest first; all when max is left out", Messages), ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin", { group: g });
      const max = listQuery.max.parse(c.req.query("max")) ?? Infinity;
      return c.json({ messages: await qstash.listDeadLetters(g, max) });
    },
  );
  serve(
    app,
    route("post", "/dlq/{group}/retry", "retryQstashDeadLetters", "Deliver letters again", {
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: letterIds } } },
      },
      responses: {
        200: json("The ids found", z.object({ messageIds: z.array(z.string()) })),
        ...REFUSALS,
      },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin", { group: g });
      const body = await readJson(c, deps, letterIds, ids);
      return c.json({ messageIds: await qstash.retryDeadLetters(g, body.messageIds) });
    },
  );
  serve(
    app,
    route("post", "/dlq/{group}/delete", "deleteQstashDeadLetters", "Delete single letters", {
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: letterIds } } },
      },
      responses: { 200: json("How many were found", z.object({ deleted: z.int() })), ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin", { group: g });
      const body = await readJson(c, deps, letterIds, ids);
      return c.json({ deleted: await qstash.deleteDeadLetters(g, body.messageIds) });
    },
  );
  serve(
    app,
    route("get", "/schedules/{id}", "qstashSchedule", "What a cron schedule publishes", {
      request: { params: z.object({ id: text }) },
      responses: { 200: json("The message of each tick", Schedule), ...REFUSALS },
    }),
    async (c) => {
      allow(c, "admin");
      return c.json(await qstash.qstashSchedule(c.req.param("id")!));
    },
  );
  return app;
}
