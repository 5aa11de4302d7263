// Open routes for probes and scrapers: health and Prometheus metrics. No API key needed.
import { createRoute, z } from "@hono/zod-openapi";
import { json, newRoutes, REFUSALS, type Routes, serve } from "./route.ts";
import { HealthInfo } from "./wire_schemas.ts";
import { Readiness } from "./ops_schemas.ts";
import { type HealthDeps, healthHandlers } from "./open_handlers.ts";

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

export function healthRoutes(deps: HealthDeps): Routes {
  const app = newRoutes();
  const h = healthHandlers(deps);
  serve(app, health, h.health);
  serve(app, ready, h.ready);
  serve(app, metrics, h.metrics);
  return app;
}
