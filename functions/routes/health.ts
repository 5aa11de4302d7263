// Open routes for probes and scrapers: health and Prometheus metrics. No API key needed.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import { json, newRoutes, REFUSALS, type RouteDeps, type Routes, serve } from "./route.ts";
import { HealthInfo } from "./wire_schemas.ts";
import { Readiness } from "./ops_schemas.ts";
import type { ReadinessInfo } from "../../runtime/protocol/ops_types.ts";

const TAGS = ["health"];

const health = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "health",
  tags: TAGS,
  summary: "Broker health",
  security: [],
  responses: { 200: json("Broker health", HealthInfo), 500: REFUSALS[500], 503: REFUSALS[503] },
});

const ready = createRoute({
  method: "get",
  path: "/readyz",
  operationId: "ready",
  tags: TAGS,
  summary: "Readiness: 200 once the broker serves, 503 with progress while it recovers",
  security: [],
  responses: {
    200: json("Ready", Readiness),
    503: json("Not ready yet: the phase, and recovery progress when recovering", Readiness),
  },
});

const metrics = createRoute({
  method: "get",
  path: "/metrics",
  operationId: "metrics",
  tags: TAGS,
  summary: "Prometheus metrics: the broker's, and this process's own HTTP figures",
  security: [],
  responses: {
    200: {
      description: "Prometheus text exposition format 0.0.4",
      content: { "text/plain": { schema: z.string().openapi({ example: "mq_messages_total 1" }) } },
    },
  },
});

export function healthRoutes(
  deps: Pick<RouteDeps<Pick<AdminApi, "health">>, "api"> & {
    metrics?: () => string | Promise<string>;
    /** Where the process is in starting; absent means ready whenever it answers. */
    readiness?: () => ReadinessInfo;
  },
): Routes {
  const app = newRoutes();
  serve(app, health, async (c) => c.json(await deps.api.call((b) => b.health())));
  serve(app, ready, (c) => {
    const r = deps.readiness?.() ?? { ready: true, phase: "ready" as const };
    return c.json(r, r.ready ? 200 : 503);
  });
  serve(
    app,
    metrics,
    async (c) =>
      c.text(await deps.metrics?.() ?? "", 200, { "content-type": "text/plain; version=0.0.4" }),
  );
  return app;
}
