// What the HTTP app's two builds share (app.ts: the one the entry files serve, which loads
// the route families on first use; full_app.ts: every family at once, with the OpenAPI
// document): the options, the per-request deps, CORS, the API key check and the refusals.
// No zod here: the first produce of an entry file loads this.
import type { Hono } from "hono";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import type { BrokerClient, BrokerResolver, QstashOf } from "../runtime/protocol/core_api.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";
import type { HaApi } from "../runtime/protocol/ha_api.ts";
import type { FunctionsLimits } from "../runtime/protocol/limits.ts";
import type { ReadinessInfo } from "../runtime/protocol/ops_types.ts";
import type { ApiKeyConfig } from "../runtime/protocol/types.ts";
import type { Authenticator, Right } from "./auth.ts";
import { BodyDeadlines } from "./body.ts";
import { apiSource } from "./routes/api_source.ts";
import type { Env, RouteContext, RouteDeps } from "./routes/route.ts";

export interface FunctionsOptions {
  broker: BrokerResolver;
  apiKeys: ApiKeyConfig[];
  limits: FunctionsLimits;
  log: (
    level: "debug" | "info" | "warn" | "error",
    msg: string,
    fields?: Record<string, unknown>,
  ) => void;
  /** Prometheus text: the broker's when it is in this process, and the process's own. */
  metrics?: () => string | Promise<string>;
  /** Readiness for GET /readyz (a broker still recovering answers 503 there). */
  readiness?: () => ReadinessInfo;
  /** A replica of a replicated group: its status and metadata routes. */
  ha?: HaApi;
  /** The QStash calls of the broker `broker` resolves to; when set, /v2 (the QStash API)
   * and /v1/qstash (its plumbing, for split-mode functions) are served. */
  qstash?: QstashOf;
  /** Origins whose browser pages may call the API (corsOrigins; "*": any). None: no CORS. */
  corsOrigins?: string[];
  /** Serve health, readiness, metrics and the single produce at once, and load every other
   * route family (with zod and the OpenAPI document) on the first request those do not
   * answer. For the entry files: a shorter cold start and less idle memory (bench/README.md
   * "Cold start"). The answers are the same; `app.routes` lists the eager routes only. */
  lazy?: boolean;
}

/** How long a browser may cache a preflight answer, s. */
const CORS_MAX_AGE_SEC = 600;

/** What every route family is given. */
export function routeDeps(options: FunctionsOptions, auth: Authenticator): RouteDeps<BrokerClient> {
  return {
    api: apiSource(options.broker),
    allow: (c: RouteContext, right: Right, resources = {}) =>
      auth.authorize(c.get("principal"), right, resources),
    permits: (c: RouteContext, right: Right, resources = {}) =>
      auth.permits(c.get("principal"), right, resources),
    limits: options.limits,
    // performance.now: a monotonic clock, as the per-request setTimeout it replaces was.
    deadlines: new BodyDeadlines(options.limits.bodyReadTimeoutMs, () => performance.now()),
  };
}

/** Refusals as problem+json, then CORS: before everything, so preflights are
 * answered without an API key. Never with credentials: a page presents its API key in
 * Authorization, which CORS does not count. */
export function frontDoor(app: Hono<Env>, options: FunctionsOptions): void {
  app.onError((err, c) => problem(c, err, options.log));
  app.notFound((c) =>
    problem(
      c,
      new BrokerError("ROUTE_NOT_FOUND", `No route ${c.req.method} ${new URL(c.req.url).pathname}`),
      options.log,
    )
  );
  const origins = options.corsOrigins ?? [];
  if (origins.length > 0) {
    app.use(
      "*",
      cors({
        origin: origins.includes("*") ? "*" : origins,
        credentials: false,
        exposeHeaders: ["retry-after"],
        maxAge: CORS_MAX_AGE_SEC,
      }),
    );
  }
}

/**
 * The API key check of /v1 and /v2. An open API authorizes everything without looking at a
 * principal, so it skips the middleware: a route with no middleware is called directly by
 * Hono, without compose's closures and promise per request.
 */
export function checkApiKeys(app: Hono<Env>, auth: Authenticator): void {
  if (auth.open) return;
  for (const path of ["/v1/*", "/v2/*"]) {
    app.use(path, async (c, next) => {
      c.set("principal", await auth.authenticate(c.req.header("authorization")));
      await next();
    });
  }
}

const API_INFO = {
  title: "edgemq",
  version: "0.1.0",
  description: "A RocketMQ-grade message broker for Deno and Bun, made for the edge.",
};

/** The OpenAPI 3.1 document of what `app` (a full app: full_app.ts) serves, from its
 * routes' schemas. */
export function openApiDocument(app: Hono<Env>): Record<string, unknown> {
  return (app as OpenAPIHono<Env>).getOpenAPI31Document({
    openapi: "3.1.0",
    info: API_INFO,
    security: [{ bearer: [] }],
  }) as unknown as Record<string, unknown>;
}

function problem(c: RouteContext, err: unknown, log: FunctionsOptions["log"]) {
  let e: BrokerError;
  if (err instanceof BrokerError) e = err;
  else {
    log("error", "unhandled error in a request", {
      err: String(err),
      stack: (err as Error)?.stack,
      path: c.req.path,
    });
    e = new BrokerError("INTERNAL", "Internal error; the broker log has the details");
  }
  return c.body(JSON.stringify(e.toProblem()), e.status as 400, {
    "content-type": "application/problem+json",
  });
}
