// The public HTTP API (DESIGN.md, "Public HTTP API"): a Hono app with no state of its own,
// composed of one sub-app per route family (routes/). It authenticates, renders every
// refusal as one problem+json, and serves the OpenAPI document built from the routes'
// schemas. Each family is given the narrowest core interface it needs, found per request:
// the broker in this process (embedded) or one found in the KV route table (split, Deploy).
//
// Two builds of the same routes: every family at once (full_app.ts), or, for the entry files
// (`lazy`), health, metrics and the single produce at once, on a plain Hono app that loads
// neither zod nor the families until a request needs them (cold start: bench/README.md).
import { Hono } from "hono";
import { HA_STATUS_PATH } from "../runtime/protocol/ha_api.ts";
import { Authenticator } from "./auth.ts";
import { checkApiKeys, frontDoor, type FunctionsOptions, routeDeps } from "./app_parts.ts";
import { haStatusHandler, healthHandlers } from "./routes/open_handlers.ts";
import { PRODUCE_PATH, produceOne } from "./routes/produce_one.ts";
import type { Env, RouteContext } from "./routes/route.ts";

export type { FunctionsLimits } from "../runtime/protocol/limits.ts";
export { type FunctionsOptions, openApiDocument } from "./app_parts.ts";

export async function createApp(options: FunctionsOptions): Promise<Hono<Env>> {
  const auth = await Authenticator.create(options.apiKeys);
  if (auth.open) {
    options.log("warn", "no API keys configured: the HTTP API is open to anyone who can reach it");
  }
  const deps = routeDeps(options, auth);
  const full = () => import("./full_app.ts");
  if (!options.lazy) return (await full()).fullApp(options, auth, deps);

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
  // Everything else: the full app, built once on first use, asked with the same request
  // and the principal found here; it renders its refusals and unknown routes the same way.
  let rest: Promise<Hono<Env>> | undefined;
  app.notFound(async (c: RouteContext) => {
    const built = await (rest ??= full().then((m) => m.fullApp(options, auth, deps, true)).catch(
      (err) => {
        rest = undefined; // the next request tries again
        throw err;
      },
    ));
    return built.fetch(c.req.raw, { principal: c.get("principal") });
  });
  return app;
}
