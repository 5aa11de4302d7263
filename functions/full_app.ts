// The public HTTP API with every route family mounted at once (DESIGN.md, "Public HTTP API"):
// an OpenAPIHono app with no state of its own, one sub-app per route family (routes/), and
// the OpenAPI document built from the routes' schemas. createApp (app.ts) returns it, or, in
// a lazy app, builds it on the first request its own routes do not answer, passes it that
// request and every request after.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Authenticator } from "./auth.ts";
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import { checkApiKeys, frontDoor, type FunctionsOptions, openApiDocument } from "./app_parts.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";
import { dlqRoutes } from "./routes/dlq.ts";
import { groupRoutes, membershipRoutes } from "./routes/groups.ts";
import { haSnapshotRoutes, haStatusRoutes } from "./routes/ha.ts";
import { healthRoutes } from "./routes/health.ts";
import { lookupRoutes } from "./routes/lookups.ts";
import { offsetRoutes } from "./routes/offsets.ts";
import { opsRoutes } from "./routes/ops.ts";
import { popRoutes } from "./routes/pop.ts";
import { produceRoutes } from "./routes/produce.ts";
import { pullRoutes } from "./routes/pull.ts";
import { type Env, json, type RouteDeps, serve } from "./routes/route.ts";
import { scheduledRoutes } from "./routes/scheduled.ts";
import { scheduleRoutes } from "./routes/schedules.ts";
import { scheduleMoveRoutes } from "./routes/schedule_move.ts";
import { subscriptionRoutes } from "./routes/subscriptions.ts";
import { topicRoutes } from "./routes/topics.ts";
import { topicRouteRoutes } from "./routes/topic_route.ts";
import { transactionRoutes } from "./routes/transactions.ts";
import { qstashApp } from "./qstash/app.ts";
import { qstashPerRequest } from "./qstash/source.ts";
import { qstashCoreRoutes } from "./routes/qstash_core.ts";

/** Every family on one app. */
export function fullApp(
  options: FunctionsOptions,
  auth: Authenticator,
  deps: RouteDeps<BrokerClient>,
): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>();
  frontDoor(app, options);

  // Open routes first: a route that answers without calling next() is never reached by
  // the API key middleware registered after it.
  app.route(
    "/",
    healthRoutes({ api: deps.api, metrics: options.metrics, readiness: options.readiness }),
  );
  app.route("/", dashboardRoutes());
  if (options.ha) app.route("/", haStatusRoutes(options.ha));
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  // Built on first request, once every family is mounted.
  let document: unknown;
  serve(app, openApiRoute, (c) => c.json(document ??= openApiDocument(app)));

  checkApiKeys(app, auth);
  // The QStash-compatible API (docs/qstash.md): the same keys, the same rights; its core
  // calls found per request, like every family's.
  const qstash = options.qstash && qstashPerRequest(deps.api, options.qstash);
  if (qstash) app.route("/v2", qstashApp({ ...deps, qstash }, options.log));

  app.route("/", produceRoutes(deps));
  app.route("/", pullRoutes(deps));
  app.route("/", lookupRoutes(deps));
  app.route("/", topicRoutes(deps));
  app.route("/", topicRouteRoutes(deps));
  app.route("/", groupRoutes(deps));
  app.route("/", membershipRoutes(deps));
  app.route("/", dlqRoutes(deps));
  app.route("/", popRoutes(deps));
  app.route("/", offsetRoutes(deps));
  app.route("/", scheduledRoutes(deps));
  app.route("/", scheduleRoutes(deps));
  app.route("/", scheduleMoveRoutes(deps));
  app.route("/", subscriptionRoutes(deps));
  app.route("/", transactionRoutes(deps));
  app.route("/", opsRoutes(deps, options.ha));
  if (qstash) app.route("/", qstashCoreRoutes(deps, qstash));
  if (options.ha) app.route("/", haSnapshotRoutes(options.ha, deps));
  return app;
}

const openApiRoute = createRoute({
  method: "get",
  path: "/openapi.json",
  operationId: "openApiDocument",
  tags: ["health"],
  summary: "This document",
  security: [],
  responses: {
    200: json(
      "OpenAPI 3.1",
      z.object({
        openapi: z.literal("3.1.0"),
        info: z.object({}).loose(),
        paths: z.object({}).loose(),
      })
        .loose().openapi("OpenApiDocument"),
    ),
  },
});
