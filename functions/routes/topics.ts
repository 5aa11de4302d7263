// Topic administration: list, get, create or update, delete.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import { readJson } from "./json_body.ts";
import { readableTopic, topicParams, userTopic } from "./params.ts";
import {
  json,
  newRoutes,
  NO_CONTENT,
  REFUSALS,
  type RouteDeps,
  type Routes,
  serve,
} from "./route.ts";
import { TopicConfig } from "./wire_schemas.ts";

const TAGS = ["topics"];

const topicUpsert = z.object({
  readQueueNums: z.int().optional(),
  writeQueueNums: z.int().optional(),
  perm: z.int().optional().openapi({ description: "READ 4 | WRITE 2 | INHERIT 1" }),
  order: z.boolean().optional(),
  brokerGroups: z.array(z.string().min(1).max(255)).optional().openapi({
    description:
      "Cluster router: the broker groups the topic spans (default: every live group); queue counts are per group",
  }),
  brokerGroupCount: z.int().min(1).optional().openapi({
    description: "Cluster router: spread the topic over this many live groups",
  }),
}).strict().openapi("TopicUpsert");

const list = createRoute({
  method: "get",
  path: "/v1/topics",
  operationId: "listTopics",
  tags: TAGS,
  summary: "List topics",
  responses: {
    200: json(
      "Every topic the API key may see",
      z.object({ topics: z.array(TopicConfig) }).openapi("Topics"),
    ),
    ...REFUSALS,
  },
});

const get = createRoute({
  method: "get",
  path: "/v1/topics/{topic}",
  operationId: "getTopic",
  tags: TAGS,
  summary: "Get a topic",
  request: { params: z.object({ topic: readableTopic }) },
  responses: { 200: json("The topic", TopicConfig), ...REFUSALS },
});

const upsert = createRoute({
  method: "put",
  path: "/v1/topics/{topic}",
  operationId: "upsertTopic",
  tags: TAGS,
  summary: "Create or update a topic",
  request: {
    params: topicParams,
    body: { required: true, content: { "application/json": { schema: topicUpsert } } },
  },
  responses: { 200: json("The topic as stored", TopicConfig), ...REFUSALS },
});

const remove = createRoute({
  method: "delete",
  path: "/v1/topics/{topic}",
  operationId: "deleteTopic",
  tags: TAGS,
  summary: "Delete a topic",
  request: { params: topicParams },
  responses: { 204: NO_CONTENT, ...REFUSALS },
});

export function topicRoutes(
  deps: RouteDeps<Pick<AdminApi, "listTopics" | "getTopic" | "upsertTopic" | "deleteTopic">>,
): Routes {
  const { api, allow, permits } = deps;
  const app = newRoutes();

  serve(app, list, async (c) => {
    const topics = await api.call((b) => b.listTopics());
    return c.json({ topics: topics.filter((t) => permits(c, "see", { topic: t.name })) });
  });
  serve(app, get, async (c) => {
    const topic = readableTopic.parse(c.req.param("topic")!);
    // Checked on the name before the broker is asked: a 403 says nothing of existence.
    allow(c, "see", { topic });
    return c.json(await api.call((b) => b.getTopic(topic)));
  });
  serve(app, upsert, async (c) => {
    const topic = userTopic.parse(c.req.param("topic")!);
    allow(c, "admin", { topic });
    const body = await readJson(c, deps, topicUpsert, {
      field: "topic setting",
      usage: (path) => `Topic setting ${path} has the wrong type`,
    });
    return c.json(await api.call((b) => b.upsertTopic(topic, body)));
  });
  serve(app, remove, async (c) => {
    const topic = userTopic.parse(c.req.param("topic")!);
    allow(c, "admin", { topic });
    await api.call((b) => b.deleteTopic(topic));
    return c.body(null, 204);
  });

  return app;
}
