// The route families the first produce does not need: everything but health, the OpenAPI
// document and produce. createApp (app.ts) mounts them at once, or, for the entry files
// (`lazy`), imports this module on the first request no route of its own answers: their
// modules and zod schemas then cost the cold start nothing (bench/README.md, "Cold start").
import type { Hono } from "hono";
import type { BrokerClient, QstashApi, QstashOf } from "../runtime/protocol/core_api.ts";
import type { HaApi } from "../runtime/protocol/ha_api.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";
import { dlqRoutes } from "./routes/dlq.ts";
import { groupRoutes, membershipRoutes } from "./routes/groups.ts";
import { haSnapshotRoutes } from "./routes/ha.ts";
import { lookupRoutes } from "./routes/lookups.ts";
import { offsetRoutes } from "./routes/offsets.ts";
import { opsRoutes } from "./routes/ops.ts";
import { popRoutes } from "./routes/pop.ts";
import { pullRoutes } from "./routes/pull.ts";
import type { Env, RouteDeps } from "./routes/route.ts";
import { scheduledRoutes } from "./routes/scheduled.ts";
import { scheduleRoutes } from "./routes/schedules.ts";
import { subscriptionRoutes } from "./routes/subscriptions.ts";
import { topicRoutes } from "./routes/topics.ts";
import { topicRouteRoutes } from "./routes/topic_route.ts";
import { transactionRoutes } from "./routes/transactions.ts";
import { qstashApp } from "./qstash/app.ts";
import { qstashPerRequest } from "./qstash/source.ts";
import { qstashCoreRoutes } from "./routes/qstash_core.ts";

export interface FamilyOptions {
  deps: RouteDeps<BrokerClient>;
  qstash?: QstashOf;
  ha?: HaApi;
  log: (level: "error", msg: string, fields: Record<string, unknown>) => void;
}

/** Mounts the families in three steps, so that an app mounting everything at once keeps
 * the order it always had: `open` before the API key middleware, `v2` before produce,
 * `rest` after it. Returns the steps; each takes the app to mount on. */
export function families(o: FamilyOptions) {
  // The QStash-compatible API (docs/qstash.md): the same keys, the same rights; its core
  // calls found per request, like every family's.
  const qstash: QstashApi | undefined = o.qstash && qstashPerRequest(o.deps.api, o.qstash);
  const deps = o.deps;
  return {
    open(app: Hono<Env>) {
      app.route("/", dashboardRoutes());
    },
    v2(app: Hono<Env>) {
      if (qstash) app.route("/v2", qstashApp({ ...deps, qstash }, o.log));
    },
    rest(app: Hono<Env>) {
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
      app.route("/", subscriptionRoutes(deps));
      app.route("/", transactionRoutes(deps));
      app.route("/", opsRoutes(deps, o.ha));
      if (qstash) app.route("/", qstashCoreRoutes(deps, qstash));
      if (o.ha) app.route("/", haSnapshotRoutes(o.ha, deps));
    },
  };
}
