// The public HTTP API (DESIGN.md, "Public HTTP API"): a Hono app with no state of its own,
// composed of one sub-app per route family (routes/). It authenticates, renders every
// refusal as one problem+json, and serves the OpenAPI document built from the routes'
// schemas. Each family is given the narrowest core interface it needs, found per request:
// the broker in this process (embedded) or one found in the KV route table (split, Deploy).
import type { BrokerClient, BrokerResolver, QstashOf } from "../runtime/protocol/core_api.ts";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { cors } from "hono/cors";
import { BrokerError } from "../runtime/protocol/errors.ts";
import type { HaApi } from "../runtime/protocol/ha_api.ts";
import type { ApiKeyConfig } from "../runtime/protocol/types.ts";
import type { ReadinessInfo } from "../runtime/protocol/ops_types.ts";
import { Authenticator, type Principal, type Right } from "./auth.ts";
import { BodyDeadlines } from "./body.ts";
import type { FunctionsLimits } from "../runtime/protocol/limits.ts";
import { haStatusRoutes } from "./routes/ha.ts";
import { healthRoutes } from "./routes/health.ts";
import { produceRoutes } from "./routes/produce.ts";
import {
  apiSource,
  type Env,
  json,
  type RouteContext,
  type RouteDeps,
  serve,
} from "./routes/route.ts";

export type { FunctionsLimits } from "../runtime/protocol/limits.ts";

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
  /** Mount only health, the OpenAPI document and produce now; every other family
   * (functions/families.ts) loads on the first request none of those answers. For the
   * entry files: a shorter cold start and less idle memory (bench/README.md "Cold start").
   * The routes served are the same; `app.routes` lists the eager ones only. */
  lazy?: boolean;
}

/** How long a browser may cache a preflight answer, s. */
const CORS_MAX_AGE_SEC = 600;

const API_INFO = {
  title: "edgemq",
  version: "0.1.0",
  description: "A RocketMQ-grade message broker for Deno and Bun, made for the edge.",
};

export async function createApp(options: FunctionsOptions): Promise<OpenAPIHono<Env>> {
  const auth = await Authenticator.create(options.apiKeys);
  if (auth.open) {
    options.log("warn", "no API keys configured: the HTTP API is open to anyone who can reach it");
  }
  const app = new OpenAPIHono<Env>();
  const deps: RouteDeps<BrokerClient> = {
    api: apiSource(options.broker),
    allow: (c: RouteContext, right: Right, resources = {}) =>
      auth.authorize(c.get("principal"), right, resources),
    permits: (c: RouteContext, right: Right, resources = {}) =>
      auth.permits(c.get("principal"), right, resources),
    limits: options.limits,
    // performance.now: a monotonic clock, as the per-request setTimeout it replaces was.
    deadlines: new BodyDeadlines(options.limits.bodyReadTimeoutMs, () => performance.now()),
  };

  renderRefusals(app, options.log);

  // CORS before everything, so preflights are answered without an API key. Never with
  // credentials: a page presents its API key in Authorization, which CORS does not count.
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

  // Open routes first: a route that answers without calling next() is never reached by
  // the API key middleware registered after it.
  app.route(
    "/",
    healthRoutes({ api: deps.api, metrics: options.metrics, readiness: options.readiness }),
  );
  // Imported now, or (lazy) on the first request that needs it: not while the process starts.
  const families = () =>
    import("./families.ts").then((m) =>
      m.families({ deps, qstash: options.qstash, ha: options.ha, log: options.log })
    );
  const eager = options.lazy ? undefined : await families();
  eager?.open(app);
  if (options.ha) app.route("/", haStatusRoutes(options.ha));
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  // Built on first request, once every family is mounted (lazily: by a full app built for it).
  let document: Promise<unknown> | undefined;
  serve(app, openApiRoute, async (c) =>
    c.json(
      await (document ??= options.lazy
        ? createApp({ ...options, lazy: false, log: () => {} }).then(openApiDocument)
        : Promise.resolve(openApiDocument(app))),
    ));

  // An open API authorizes everything without looking at a principal, so it skips the
  // middleware: a route with no middleware is called directly by Hono, without compose's
  // closures and promise per request.
  if (!auth.open) {
    for (const path of ["/v1/*", "/v2/*"]) {
      app.use(path, async (c, next) => {
        c.set("principal", await auth.authenticate(c.req.header("authorization")));
        await next();
      });
    }
  }
  eager?.v2(app);
  app.route("/", produceRoutes(deps));
  if (eager) eager.rest(app);
  else app.notFound(lazyFamilies(families, !auth.open, options.log));
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

/** The OpenAPI 3.1 document of what `app` serves, from its routes' schemas. */
export function openApiDocument(app: OpenAPIHono<Env>): Record<string, unknown> {
  return app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: API_INFO,
    security: [{ bearer: [] }],
  }) as unknown as Record<string, unknown>;
}

/** Every refusal as one problem+json, an unknown route too. */
function renderRefusals(app: OpenAPIHono<Env>, log: FunctionsOptions["log"]): void {
  app.onError((err, c) => problem(c, err, log));
  app.notFound((c) =>
    problem(
      c,
      new BrokerError("ROUTE_NOT_FOUND", `No route ${c.req.method} ${new URL(c.req.url).pathname}`),
      log,
    )
  );
}

type Families = Awaited<ReturnType<typeof import("./families.ts").families>>;

/**
 * What answers a request none of the eager routes matched, in a lazy app: the other
 * families, imported and mounted on an app of their own on first use, and asked with the
 * same request. The principal the API key middleware found
 * travels in the env; the families' app renders its refusals and unknown routes the same way.
 */
function lazyFamilies(
  families: () => Promise<Families>,
  authenticated: boolean,
  log: FunctionsOptions["log"],
): (c: RouteContext) => Promise<Response> {
  let rest: Promise<OpenAPIHono<Env>> | undefined;
  const build = async () => {
    const f = await families();
    const app = new OpenAPIHono<Env>();
    renderRefusals(app, log);
    if (authenticated) {
      app.use("*", (c, next) => {
        c.set("principal", (c.env as { principal: Principal }).principal);
        return next();
      });
    }
    f.open(app);
    f.v2(app);
    f.rest(app);
    return app;
  };
  return async (c) => {
    // A failed import is tried again by the next request.
    const app = await (rest ??= build().catch((err) => {
      rest = undefined;
      throw err;
    }));
    return app.fetch(c.req.raw, { principal: c.get("principal") });
  };
}

function problem(c: Context, err: unknown, log: FunctionsOptions["log"]) {
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
