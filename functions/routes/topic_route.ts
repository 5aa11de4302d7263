// A topic's route over broker groups (docs/cluster.md): read it, add a group, drain one,
// remove one. A single broker answers the read for its own group and refuses the changes
// with CLUSTER_ROUTER_REQUIRED (501); the cluster router in the functions answers all.
import { createRoute, z } from "@hono/zod-openapi";
import type { ClusterAdminApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QUEUE_ID_STRIDE } from "../../runtime/protocol/cluster_types.ts";
import { readJson } from "./json_body.ts";
import { readableTopic, topicParams, userTopic } from "./params.ts";
import { json, newRoutes, REFUSALS, REFUSED, type RouteDeps, type Routes, serve } from "./route.ts";
import { Problem } from "./wire_schemas.ts";

const TAGS = ["topics"];

/** Broker group names are the brokers' MQ_BROKER_NAME: any text, within reason. */
const brokerGroup = z.string().min(1).max(255).openapi({ description: "A broker group's name" });

export const TopicRouteView = z.object({
  topic: z.string(),
  brokerGroups: z.array(z.object({
    name: z.string(),
    url: z.string().openapi({ description: "Its master's HTTP base URL; empty when unknown" }),
    epoch: z.int(),
    state: z.enum(["active", "draining"]),
    slot: z.int(),
  })),
  queues: z.array(z.object({
    queueId: z.int().openapi({
      description: `Global id: slot × ${QUEUE_ID_STRIDE} + localQueueId`,
    }),
    brokerGroup: z.string(),
    localQueueId: z.int(),
    readable: z.boolean(),
    writable: z.boolean(),
  })),
}).openapi("TopicRouteView");

const NOT_A_CLUSTER = {
  501: {
    description: "A single broker: this needs the cluster router",
    content: { "application/problem+json": { schema: Problem } },
  },
};
const groupParams = z.object({ topic: userTopic, group: brokerGroup });
const addBody = z.object({ brokerGroup }).strict().openapi("TopicGroupAdd");

const get = createRoute({
  method: "get",
  path: "/v1/topics/{topic}/route",
  operationId: "getTopicRoute",
  tags: TAGS,
  summary: "A topic's broker groups and queues (global queue ids)",
  request: { params: z.object({ topic: readableTopic }) },
  responses: { 200: json("The route", TopicRouteView), ...REFUSALS },
});

const add = createRoute({
  method: "post",
  path: "/v1/topics/{topic}/route/groups",
  operationId: "addTopicGroup",
  tags: TAGS,
  summary: "Spread a topic to one more broker group (a new slot)",
  request: {
    params: topicParams,
    body: { required: true, content: { "application/json": { schema: addBody } } },
  },
  responses: {
    200: json("The route after", TopicRouteView),
    ...REFUSALS,
    409: REFUSED[409],
    ...NOT_A_CLUSTER,
  },
});

const drain = createRoute({
  method: "post",
  path: "/v1/topics/{topic}/route/groups/{group}/drain",
  operationId: "drainTopicGroup",
  tags: TAGS,
  summary: "Stop writes to a topic on one broker group; reads go on",
  request: { params: groupParams },
  responses: {
    200: json("The route after", TopicRouteView),
    ...REFUSALS,
    409: REFUSED[409],
    ...NOT_A_CLUSTER,
  },
});

const remove = createRoute({
  method: "delete",
  path: "/v1/topics/{topic}/route/groups/{group}",
  operationId: "removeTopicGroup",
  tags: TAGS,
  summary: "Remove a drained broker group from a topic (its topic is deleted there)",
  request: {
    params: groupParams,
    query: z.object({
      force: z.enum(["true", "false"]).optional().openapi({
        description: "Remove even if not drained or lagging: its messages are lost",
      }),
    }),
  },
  responses: {
    200: json("The route after", TopicRouteView),
    ...REFUSALS,
    409: REFUSED[409],
    ...NOT_A_CLUSTER,
  },
});

export function topicRouteRoutes(deps: RouteDeps<ClusterAdminApi>): Routes {
  const { api, allow } = deps;
  const app = newRoutes();
  serve(app, get, async (c) => {
    const topic = readableTopic.parse(c.req.param("topic")!);
    allow(c, "see", { topic });
    return c.json(await api.call((b) => b.topicRoute(topic)));
  });
  serve(app, add, async (c) => {
    const topic = userTopic.parse(c.req.param("topic")!);
    allow(c, "admin", { topic });
    const body = await readJson(c, deps, addBody, {
      field: "route change",
      usage: (path) => `Route change ${path} has the wrong type`,
    });
    return c.json(await api.call((b) => b.addTopicGroup(topic, body.brokerGroup)));
  });
  serve(app, drain, async (c) => {
    const { topic, group } = params(c.req.param("topic")!, c.req.param("group")!);
    allow(c, "admin", { topic });
    return c.json(await api.call((b) => b.drainTopicGroup(topic, group)));
  });
  serve(app, remove, async (c) => {
    const { topic, group } = params(c.req.param("topic")!, c.req.param("group")!);
    allow(c, "admin", { topic });
    const force = c.req.query("force");
    if (force !== undefined && force !== "true" && force !== "false") {
      throw new BrokerError("INVALID_PARAMETER", `force must be true or false, not ${force}`);
    }
    return c.json(
      await api.call((b) => b.removeTopicGroup(topic, group, { force: force === "true" })),
    );
  });
  return app;
}

function params(topic: string, group: string): { topic: string; group: string } {
  const parsed = brokerGroup.safeParse(group);
  if (!parsed.success) {
    throw new BrokerError("INVALID_PARAMETER", "A broker group name has 1-255 characters");
  }
  return { topic: userTopic.parse(topic), group: parsed.data };
}
