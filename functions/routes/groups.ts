// Consumer groups: their settings (admin), and membership for long-lived consumers:
// heartbeat, leave, the queues assigned to a member, and queue locks for ordered
// consumption.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi, ConsumerApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { readJson } from "./json_body.ts";
import { group, groupParams, optionalText, QUEUE_ID_MAX, readableTopic, text } from "./params.ts";
import { parseNonNegativeInt } from "../../runtime/protocol/names.ts";
import { json, newRoutes, REFUSALS, REFUSED, type RouteDeps, type Routes, serve } from "./route.ts";
import { AssignmentView, GroupView, MembersView } from "./wire_schemas.ts";

const TAGS = ["groups"];

// Values are the broker's to check (ranges, combinations); the app refuses unknown fields.
const groupSettings = z.object({
  messageModel: z.enum(["CLUSTERING", "BROADCASTING"]).optional(),
  consumeFromWhere: z.enum(["LAST_OFFSET", "FIRST_OFFSET", "TIMESTAMP"]).optional(),
  consumeTimestampMs: z.int().nullable().optional(),
  retryMaxTimes: z.int().optional(),
  retryBackoffMs: z.array(z.int()).nullable().optional(),
  orderly: z.boolean().optional(),
}).strict().openapi("GroupSettings");

const heartbeat = z.object({
  clientId: z.string(),
  subscriptions: z.array(z.looseObject({ topic: z.string(), tags: z.string().optional() })),
  strategy: z.enum([
    "AVG",
    "AVG_BY_CIRCLE",
    "CONSISTENT_HASH",
    "CONFIG",
    "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY",
  ]).nullish(),
  room: z.string().optional(),
  configQueues: z.array(z.int()).nullish(),
}).strict().openapi("Heartbeat");

const lock = z.object({ clientId: z.string(), topic: z.string(), queueIds: z.array(z.int()) })
  .openapi("QueueLock");

const upsertGroup = createRoute({
  method: "put",
  path: "/v1/groups/{group}",
  operationId: "upsertGroup",
  tags: TAGS,
  summary: "Create or update a consumer group (an empty body takes the defaults)",
  request: {
    params: groupParams,
    body: { content: { "application/json": { schema: groupSettings } } },
  },
  responses: { 200: json("The group as stored", GroupView), ...REFUSALS },
});

const getGroup = createRoute({
  method: "get",
  path: "/v1/groups/{group}",
  operationId: "getGroup",
  tags: TAGS,
  summary: "Get a consumer group",
  request: { params: groupParams },
  responses: { 200: json("The group", GroupView), ...REFUSALS },
});

const join = createRoute({
  method: "post",
  path: "/v1/groups/{group}/heartbeat",
  operationId: "heartbeat",
  tags: TAGS,
  summary: "Join or stay in the group (RocketMQ's heartbeat)",
  request: {
    params: groupParams,
    body: { required: true, content: { "application/json": { schema: heartbeat } } },
  },
  responses: { 200: json("The members", MembersView), ...REFUSALS },
});

const leave = createRoute({
  method: "delete",
  path: "/v1/groups/{group}/members/{clientId}",
  operationId: "leaveGroup",
  tags: TAGS,
  summary: "Leave the group",
  request: { params: z.object({ group, clientId: text }) },
  responses: { 200: json("The members left", MembersView), ...REFUSALS },
});

const assignmentQuery = {
  topic: readableTopic,
  // Required, with its own message when missing.
  clientId: optionalText.openapi({ param: { required: true } }),
  // The cluster router's global queue ids across broker groups (docs/cluster.md).
  queueIds: z.string().optional().transform((list) =>
    list?.split(",").map((id) => parseNonNegativeInt("queueIds", id, QUEUE_ID_MAX)!)
  ).openapi({
    type: "string",
    description: "Allocate over these queue ids (comma-separated) instead of this broker's queues",
    example: "0,1,1024",
  }),
  // With queueIds: each slot's broker group (machine rooms, `room@name`; docs/cluster.md).
  slotBrokers: z.string().optional().transform((list) => list?.split(",")).openapi({
    type: "string",
    description:
      "With queueIds: the broker group of each slot (queue id / 1024), comma-separated, so each queue carries its group's name (and machine room)",
    example: "hz@broker-a,sh@broker-b",
  }),
};

const assignment = createRoute({
  method: "get",
  path: "/v1/groups/{group}/assignment",
  operationId: "getAssignment",
  tags: TAGS,
  summary: "The queues of a topic this member should consume now",
  request: { params: groupParams, query: z.object(assignmentQuery) },
  responses: { 200: json("The member's queues", AssignmentView), ...REFUSALS },
});

const locks = (action: "lock" | "unlock") =>
  createRoute({
    method: "post",
    path: `/v1/groups/{group}/${action}`,
    operationId: action === "lock" ? "lockQueues" : "unlockQueues",
    tags: TAGS,
    summary: action === "lock"
      ? "Lock queues for ordered consumption; answers the queues locked"
      : "Release queue locks; answers the queues released",
    request: {
      params: groupParams,
      body: { required: true, content: { "application/json": { schema: lock } } },
    },
    responses: {
      200: json(
        "Queue ids",
        z.object({ queueIds: z.array(z.int()) }).openapi("QueueIds"),
      ),
      ...REFUSALS,
      ...(action === "lock" ? { 409: REFUSED[409] } : {}),
    },
  });

export function groupRoutes(deps: RouteDeps<Pick<AdminApi, "upsertGroup" | "getGroup">>): Routes {
  const { api, allow } = deps;
  const app = newRoutes();
  serve(app, upsertGroup, async (c) => {
    const g = group.parse(c.req.param("group")!);
    allow(c, "subscribe", { group: g });
    const body = c.req.header("content-length") === "0" || !c.req.raw.body
      ? {}
      : await readJson(c, deps, groupSettings, { field: "group setting" });
    return c.json(await api.call((b) => b.upsertGroup(g, body)));
  });
  serve(app, getGroup, async (c) => {
    const g = group.parse(c.req.param("group")!);
    allow(c, "subscribe", { group: g });
    return c.json(await api.call((b) => b.getGroup(g)));
  });
  return app;
}

export function membershipRoutes(
  deps: RouteDeps<
    Pick<ConsumerApi, "heartbeat" | "unregister" | "assignment" | "lockQueues">
  >,
): Routes {
  const { api, allow } = deps;
  const app = newRoutes();
  serve(app, join, async (c) => {
    const g = group.parse(c.req.param("group")!);
    allow(c, "subscribe", { group: g });
    const body = await readJson(c, deps, heartbeat, {
      field: "heartbeat field",
      usage: (path) =>
        path.startsWith("subscriptions")
          ? "subscriptions must be a list of {topic, tags?}"
          : `Cannot read heartbeat: ${path} has the wrong type`,
    });
    for (const s of body.subscriptions) allow(c, "subscribe", { topic: s.topic, group: g });
    return c.json(
      await api.call((b) =>
        b.heartbeat(g, {
          ...body,
          strategy: body.strategy ?? undefined,
          configQueues: body.configQueues ?? undefined,
        })
      ),
    );
  });
  serve(app, leave, async (c) => {
    const g = group.parse(c.req.param("group")!);
    allow(c, "subscribe", { group: g });
    return c.json(await api.call((b) => b.unregister(g, c.req.param("clientId")!)));
  });
  serve(app, assignment, async (c) => {
    const g = group.parse(c.req.param("group")!);
    const topic = assignmentQuery.topic.parse(c.req.query("topic") ?? "");
    const clientId = c.req.query("clientId");
    if (!clientId) {
      throw new BrokerError("INVALID_PARAMETER", "Cannot compute an assignment without clientId");
    }
    allow(c, "subscribe", { topic, group: g });
    const queueIds = assignmentQuery.queueIds.parse(c.req.query("queueIds"));
    const slotBrokers = assignmentQuery.slotBrokers.parse(c.req.query("slotBrokers"));
    const options = queueIds === undefined ? {} : { queueIds, slotBrokers };
    return c.json(await api.call((b) => b.assignment(g, clientId, topic, options)));
  });
  for (const action of ["lock", "unlock"] as const) {
    serve(app, locks(action), async (c) => {
      const g = group.parse(c.req.param("group")!);
      const body = await readJson(c, deps, lock, {
        field: "lock field",
        usage: () => "Send {clientId, topic, queueIds: [int]}",
      });
      const topic = readableTopic.parse(body.topic);
      allow(c, "subscribe", { topic, group: g });
      const queueIds = await api.call((b) =>
        b.lockQueues(g, body.clientId, topic, body.queueIds, action === "unlock")
      );
      return c.json({ queueIds });
    });
  }
  return app;
}
