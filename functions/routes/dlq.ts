// A group's dead-letter queue (%DLQ%group): look, redrive to the retry topic, or purge.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import { readJson } from "./json_body.ts";
import { group, groupParams, intText } from "./params.ts";
import { json, newRoutes, REFUSALS, type RouteDeps, type Routes, serve } from "./route.ts";
import { PullResult } from "./wire_schemas.ts";
import { REDRIVE_IDS_MAX } from "../../runtime/protocol/limits.ts";

const TAGS = ["dlq"];
const redrive = z.object({
  messageIds: z.array(z.string()).max(REDRIVE_IDS_MAX).optional().openapi({
    description: "Left out: every message",
  }),
}).openapi("Redrive");

export function dlqRoutes(
  deps: RouteDeps<Pick<AdminApi, "listDlq" | "redriveDlq" | "purgeDlq">>,
): Routes {
  const { api, allow, limits } = deps;
  const app = newRoutes();
  const listQuery = { offset: intText("offset"), max: intText("max", limits.pullMsgNumsMax) };

  serve(
    app,
    createRoute({
      method: "get",
      path: "/v1/groups/{group}/dlq",
      operationId: "listDlq",
      tags: TAGS,
      summary: "Messages in the group's dead-letter queue",
      request: { params: groupParams, query: z.object(listQuery) },
      responses: { 200: json("Dead-lettered messages", PullResult), ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "subscribe", { group: g });
      const offset = listQuery.offset.parse(c.req.query("offset"));
      const max = listQuery.max.parse(c.req.query("max"));
      return c.json(await api.call((b) => b.listDlq(g, { offset, max })));
    },
  );
  serve(
    app,
    createRoute({
      method: "post",
      path: "/v1/groups/{group}/dlq/redrive",
      operationId: "redriveDlq",
      tags: TAGS,
      summary: "Send dead-lettered messages back to the group's retry topic",
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: redrive } } },
      },
      responses: {
        200: json("How many", z.object({ redriven: z.int() }).openapi("Redriven")),
        ...REFUSALS,
      },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin", { group: g });
      const body = await readJson(c, deps, redrive, {
        field: "redrive field",
        usage: () => `messageIds must be a list of at most ${REDRIVE_IDS_MAX} ids`,
      });
      return c.json(await api.call((b) => b.redriveDlq(g, body.messageIds)));
    },
  );
  serve(
    app,
    createRoute({
      method: "delete",
      path: "/v1/groups/{group}/dlq",
      operationId: "purgeDlq",
      tags: TAGS,
      summary: "Delete every message in the group's dead-letter queue",
      request: { params: groupParams },
      responses: {
        200: json("How many", z.object({ purged: z.int() }).openapi("Purged")),
        ...REFUSALS,
      },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin", { group: g });
      return c.json(await api.call((b) => b.purgeDlq(g)));
    },
  );
  return app;
}
