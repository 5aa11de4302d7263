// The public HTTP API (DESIGN.md, "Public HTTP API"): a Hono app with no state of its own,
// composed of one sub-app per route family (routes/). It authenticates, renders every
// refusal as one problem+json, and serves the OpenAPI document built from the routes'
// schemas. Each family is given the narrowest core interface it needs, found per request:
// the broker in this process (embedded) or one found in the KV route table (split, Deploy).
//
// Two builds of the same routes: every family at once (full_app.ts), or, for the entry files
// (`lazy`), health, metrics and the single produce at once, on a plain Hono app that loads
// neither zod nor the families until a request needs them, then hands every request to the
// full app (cold start: bench/README.md).
import { Hono } from "hono";
import { HA_STATUS_PATH } from "../runtime/protocol/ha_api.ts";
import { Authenticator } from "./auth.ts";
import { checkApiKeys, frontDoor, type FunctionsOptions, routeDeps } from "./app_parts.ts";
import { haStatusHandler, healthHandlers } from "./routes/open_handlers.ts";
import { PRODUCE_PATH, produceOne } from "./routes/produce_one.ts";
import type { Env } from "./routes/route.ts";

export type { FunctionsLimits } from "../runtime/protocol/limits.ts";
export { type FunctionsOptions, openApiDocument } from "./app_parts.ts";

export async function createApp(options: FunctionsOptions): Promise<Hono<Env>> {
  const auth = await Authenticator.create(options.apiKeys);
  if (auth.open) {
    options.log("warn", "no API keys configured: the HTTP API is open to anyone who can reach it");
  }
  const deps = routeDeps(options, auth);
  if (!options.lazy) return (await import("./full_app.ts")).fullApp(options, auth, deps);

  const app = new Hono<Env>();
  frontDoor(app, options);
  // The same handlers, in the same order, as full_app.ts mounts them.
  const health = healthHandlers({
    api: deps.api,
    metrics: options.metrics,
    readiness: options.readiness,
  });
  app.get("/healthz", health.health);
  app.get("/readyz", health.ready);
  app.get("/metrics", health.metrics);
  if (options.ha) app.get(HA_STATUS_PATH, haStatusHandler(options.ha));
  checkApiKeys(app, auth);
  app.post(PRODUCE_PATH, produceOne(deps));
  // Everything else goes to the full app, built on the first request that needs it; from
  // then on it takes every request itself, so routes cost what they cost in a full app.
  let full: Hono<Env> | undefined;
  let loading: Promise<Hono<Env>> | undefined;
  const load = () =>
    loading ??= import("./full_app.ts").then((m) => full = m.fullApp(options, auth, deps))
      .catch((err) => {
        loading = undefined; // the next request tries again
        throw err;
      });
  const lazyFetch = app.fetch;
  const eager = eagerRoute(!!options.ha);
  app.fetch = (request, ...rest) =>
    full
      ? full.fetch(request, ...rest)
      : eager(request)
      ? lazyFetch(request, ...rest)
      : load().then((f) => f.fetch(request, ...rest));
  return app;
}

/** Whether the lazy app serves `request` itself: its routes, and CORS preflights (answered
 * the same by either app). Anything else, an unknown route too, goes to the full app. */
function eagerRoute(ha: boolean): (request: Request) => boolean {
  const produce = /^\/v1\/topics\/[^/]+\/messages$/;
  return (request) => {
    const url = request.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    const query = url.indexOf("?", start);
    const path = start < 0 ? "/" : url.slice(start, query < 0 ? undefined : query);
    switch (request.method) {
      case "POST":
        return produce.test(path);
      case "GET":
      case "HEAD":
        return path === "/healthz" || path === "/readyz" || path === "/metrics" ||
          (ha && path === HA_STATUS_PATH);
      case "OPTIONS":
        return true;
      default:
        return false;
    }
  };
}
