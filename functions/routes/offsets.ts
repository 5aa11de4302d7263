// Consumer offsets: read them per topic or queue, commit one, or reset a topic's to a time.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi, ConsumerApi } from "../../runtime/protocol/core_api.ts";
import { readJson } from "./json_body.ts";
import { group, queueId, readableTopic } from "./params.ts";
import {
  json,
  newRoutes,
  REFUSALS,
  REFUSED,
  type RouteContext,
  type RouteDeps,
  type Routes,
  serve,
} from "./route.ts";
import { GroupOffsets, QueueOffsetInfo } from "./wire_schemas.ts";

const TAGS = ["offsets"];
const topicParams = z.object({ group, topic: readableTopic });
const queueParams = z.object({ group, topic: readableTopic, queueId });

const reset = z.object({ timestamp: z.int().min(0) }).strict().openapi("OffsetReset");
const commit = z.object({ offset: z.int().min(0) }).strict().openapi("OffsetCommit");

const getOffsets = createRoute({
  method: "get",
  path: "/v1/groups/{group}/offsets/{topic}",
  operationId: "getOffsets",
  tags: TAGS,
  summary: "The group's offsets and lag on every queue of a topic",
  request: { params: topicParams },
  responses: { 200: json("Offsets", GroupOffsets), ...REFUSALS },
});

const resetOffsets = createRoute({
  method: "put",
  path: "/v1/groups/{group}/offsets/{topic}",
  operationId: "resetOffsetsByTime",
  tags: TAGS,
  summary: "Reset the group's offsets on a topic to the first message stored at a time",
  request: {
    params: topicParams,
    body: { required: true, content: { "application/json": { schema: reset } } },
  },
  responses: { 200: json("Offsets after the reset", GroupOffsets), ...REFUSALS },
});

const getOffset = createRoute({
  method: "get",
  path: "/v1/groups/{group}/offsets/{topic}/{queueId}",
  operationId: "getOffset",
  tags: TAGS,
  summary: "The group's offset on one queue",
  request: { params: queueParams },
  responses: { 200: json("Offset", QueueOffsetInfo), ...REFUSALS },
});

const commitOffset = createRoute({
  method: "put",
  path: "/v1/groups/{group}/offsets/{topic}/{queueId}",
  operationId: "commitOffset",
  tags: TAGS,
  summary: "Commit the group's offset on one queue",
  request: {
    params: queueParams,
    body: { required: true, content: { "application/json": { schema: commit } } },
  },
  responses: { 200: json("Offset as committed", QueueOffsetInfo), ...REFUSALS, 416: REFUSED[416] },
});

export function offsetRoutes(
  deps: RouteDeps<
    & Pick<ConsumerApi, "getOffsets" | "getOffset" | "commitOffset">
    & Pick<AdminApi, "resetOffsetsByTime">
  >,
): Routes {
  const { api, allow } = deps;
  const app = newRoutes();
  const names = (c: RouteContext) => {
    const [g, topic] = [
      group.parse(c.req.param("group")!),
      readableTopic.parse(c.req.param("topic")!),
    ];
    allow(c, "subscribe", { topic, group: g });
    return { g, topic };
  };
  serve(app, getOffsets, async (c) => {
    const { g, topic } = names(c);
    return c.json(await api.call((b) => b.getOffsets(g, topic)));
  });
  serve(app, resetOffsets, async (c) => {
    const { g, topic } = names(c);
    const body = await readJson(c, deps, reset, {
      field: "offset reset field",
      usage: () => 'Cannot reset offsets: send {"timestamp": <epoch ms>}',
    });
    return c.json(await api.call((b) => b.resetOffsetsByTime(g, topic, body.timestamp)));
  });
  serve(app, getOffset, async (c) => {
    const { g, topic } = names(c);
    const id = queueId.parse(c.req.param("queueId")!);
    return c.json(await api.call((b) => b.getOffset(g, topic, id)));
  });
  serve(app, commitOffset, async (c) => {
    const { g, topic } = names(c);
    const id = queueId.parse(c.req.param("queueId")!);
    const body = await readJson(c, deps, commit, {
      field: "offset field",
      usage: () => 'Cannot commit offset: send {"offset": <non-negative integer>}',
    });
    return c.json(await api.call((b) => b.commitOffset(g, topic, id, body.offset)));
  });
  return app;
}
