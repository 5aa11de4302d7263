// Webhook subscriptions: a consumer group whose consumer is an HTTP endpoint. Registering
// an egress URL is an admin right; reading the delivery log needs subscribe on the group.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import type { SubscriptionInput } from "../../runtime/protocol/types.ts";
import { readJson } from "./json_body.ts";
import { group, groupParams, intText, optionalText } from "./params.ts";
import {
  json,
  newRoutes,
  NO_CONTENT,
  REFUSALS,
  type RouteDeps,
  type Routes,
  serve,
} from "./route.ts";
import { DeliveryAttempt, SubscriptionView } from "./wire_schemas.ts";

const TAGS = ["subscriptions"];

// Shapes only: the broker checks values (URL policy, ranges, secrets) and reads a null
// tags, headers or failureCallbackUrl as the default.
const subscriptionInput = z.object({
  topic: z.string(),
  tags: z.string().nullish().openapi({ description: '"*" (default) or "TagA || TagB"' }),
  url: z.string(),
  secrets: z.array(z.string()).optional().openapi({
    description: "whsec_<base64> signing secrets; left out on create, one is made",
  }),
  headers: z.record(z.string(), z.string()).nullish(),
  timeoutMs: z.int().optional(),
  maxConcurrency: z.int().optional(),
  ratePerSec: z.int().optional(),
  ordered: z.boolean().optional(),
  retryMaxTimes: z.int().optional(),
  retryBackoffMs: z.array(z.int()).nullable().optional(),
  startFrom: z.union([z.enum(["latest", "earliest"]), z.int().min(0)]).optional(),
  failureCallbackUrl: z.string().nullish(),
  dialect: z.enum(["standard", "qstash"]).optional().openapi({
    description: '"qstash": delivered as QStash does (docs/qstash.md); url may be ""',
  }),
}).strict().openapi("SubscriptionInput");

const replay = z.object({ timestamp: z.int() }).strict().openapi("Replay");

type Api = Pick<
  AdminApi,
  | "upsertSubscription"
  | "listSubscriptions"
  | "getSubscription"
  | "deleteSubscription"
  | "setSubscriptionPaused"
  | "replaySubscription"
  | "listDeliveries"
>;

export function subscriptionRoutes(deps: RouteDeps<Api>): Routes {
  const { api, allow } = deps;
  const app = newRoutes();
  const one = json("The subscription", SubscriptionView);
  const deliveriesQuery = {
    limit: intText("limit"),
    messageId: optionalText.openapi({ description: "Attempts for this message only" }),
  };

  serve(
    app,
    createRoute({
      method: "put",
      path: "/v1/subscriptions/{group}",
      operationId: "upsertSubscription",
      tags: TAGS,
      summary: "Create or replace a webhook subscription",
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: subscriptionInput } } },
      },
      responses: { 200: one, ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin");
      const body = await readJson(c, deps, subscriptionInput, { field: "subscription field" });
      return c.json(await api.call((b) => b.upsertSubscription(g, body as SubscriptionInput)));
    },
  );
  serve(
    app,
    createRoute({
      method: "get",
      path: "/v1/subscriptions",
      operationId: "listSubscriptions",
      tags: TAGS,
      summary: "List webhook subscriptions",
      request: {
        query: z.object({
          revealSecrets: z.enum(["true", "false"]).optional().openapi({
            description: "true: secrets in full (the cluster router copies subscriptions " +
              "to a broker group that joins a topic)",
          }),
        }),
      },
      responses: {
        200: json(
          "Every subscription",
          z.object({ subscriptions: z.array(SubscriptionView) }).openapi("Subscriptions"),
        ),
        ...REFUSALS,
      },
    }),
    async (c) => {
      allow(c, "admin");
      const revealSecrets = c.req.query("revealSecrets") === "true";
      return c.json({
        subscriptions: await api.call((b) => b.listSubscriptions({ revealSecrets })),
      });
    },
  );
  serve(
    app,
    createRoute({
      method: "get",
      path: "/v1/subscriptions/{group}",
      operationId: "getSubscription",
      tags: TAGS,
      summary: "Get a webhook subscription with its delivery stats",
      request: { params: groupParams },
      responses: { 200: one, ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "subscribe", { group: g });
      return c.json(await api.call((b) => b.getSubscription(g)));
    },
  );
  serve(
    app,
    createRoute({
      method: "delete",
      path: "/v1/subscriptions/{group}",
      operationId: "deleteSubscription",
      tags: TAGS,
      summary: "Delete a webhook subscription",
      request: { params: groupParams },
      responses: { 204: NO_CONTENT, ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin");
      await api.call((b) => b.deleteSubscription(g));
      return c.body(null, 204);
    },
  );
  for (const [action, paused] of [["pause", true], ["resume", false]] as const) {
    serve(
      app,
      createRoute({
        method: "post",
        path: `/v1/subscriptions/{group}/${action}`,
        operationId: `${action}Subscription`,
        tags: TAGS,
        summary: paused ? "Pause deliveries" : "Resume deliveries",
        request: { params: groupParams },
        responses: { 200: one, ...REFUSALS },
      }),
      async (c) => {
        const g = group.parse(c.req.param("group")!);
        allow(c, "admin");
        return c.json(await api.call((b) => b.setSubscriptionPaused(g, paused)));
      },
    );
  }
  serve(
    app,
    createRoute({
      method: "post",
      path: "/v1/subscriptions/{group}/replay",
      operationId: "replaySubscription",
      tags: TAGS,
      summary: "Deliver again from the first message stored at a time",
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: replay } } },
      },
      responses: { 200: one, ...REFUSALS },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "admin");
      const body = await readJson(c, deps, replay, {
        field: "replay field",
        usage: () => 'Cannot replay: send {"timestamp": <epoch ms>}',
      });
      return c.json(await api.call((b) => b.replaySubscription(g, body.timestamp)));
    },
  );
  serve(
    app,
    createRoute({
      method: "get",
      path: "/v1/subscriptions/{group}/deliveries",
      operationId: "listDeliveries",
      tags: TAGS,
      summary: "The delivery log, newest first",
      request: { params: groupParams, query: z.object(deliveriesQuery) },
      responses: {
        200: json(
          "Delivery attempts",
          z.object({ deliveries: z.array(DeliveryAttempt) }).openapi("Deliveries"),
        ),
        ...REFUSALS,
      },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "subscribe", { group: g });
      const limit = deliveriesQuery.limit.parse(c.req.query("limit"));
      const messageId = c.req.query("messageId");
      return c.json({
        deliveries: await api.call((b) =>
          b.listDeliveries(g, {
            ...(limit !== undefined ? { limit } : {}),
            ...(messageId !== undefined ? { messageId } : {}),
          })
        ),
      });
    },
  );
  return app;
}
