// What every route family shares: the app type, what a family is given (the narrowest core
// interface, resolved per request), and how a route is declared once for both the router
// and the OpenAPI document.
import { OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Principal, Right } from "../auth.ts";
import type { BodyDeadlines } from "../body.ts";
import type { FunctionsLimits } from "../../runtime/protocol/limits.ts";
import { Problem } from "./wire_schemas.ts";
import type { ApiSource } from "./api_source.ts";

export { type ApiSource, apiSource } from "./api_source.ts";

export type Env = { Variables: { principal: Principal } };
export type RouteContext = Context<Env>;
export type Routes = OpenAPIHono<Env>;

/** What a route family is given. */
export interface RouteDeps<Api> {
  api: ApiSource<Api>;
  /** Throws FORBIDDEN unless the request's principal holds `right` on the resources. */
  allow(c: RouteContext, right: Right, resources?: { topic?: string; group?: string }): void;
  /** Whether the request's principal holds `right` on the resources: lists keep only what
   * the key may see. */
  permits(c: RouteContext, right: Right, resources?: { topic?: string; group?: string }): boolean;
  limits: FunctionsLimits;
  deadlines: BodyDeadlines;
}

export function newRoutes(): Routes {
  return new OpenAPIHono<Env>();
}

/**
 * Declares `route` in the document and serves it with `handler`. Not OpenAPIHono's
 * openapi(): that runs the request schemas as middleware before the handler, so a bad
 * parameter would win over a missing right, each route would pay a middleware, and JSON
 * bodies would be read without our byte limit and deadline. Handlers parse with the same
 * schemas (params.ts, json_body.ts), in the order the checks have always run.
 */
export function serve(
  app: Routes,
  route: RouteConfig,
  handler: (c: RouteContext) => Response | Promise<Response>,
) {
  app.openAPIRegistry.registerPath(route);
  app.on(route.method.toUpperCase(), route.path.replaceAll(/\{(\w+)\}/g, ":$1"), handler);
}

/** A JSON response of `schema`. */
export function json(description: string, schema: z.ZodType) {
  return { description, content: { "application/json": { schema } } };
}

const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: Problem } },
});

/** The refusals most routes can answer; each renders a BrokerError (one Problem schema). */
export const REFUSALS = {
  400: problem("Bad input: invalid name, parameter, header or JSON"),
  401: problem("Missing or unknown API key"),
  403: problem("The API key lacks the right, or the topic does not allow it"),
  404: problem("No such topic, group, queue, message or resource"),
  500: problem("Internal error"),
  503: problem("No broker could be reached, or it is not the leader"),
} as const;

/** Refusals of some routes only. */
export const REFUSED = {
  408: problem("The request body arrived too slowly"),
  409: problem("Conflict with the resource's state"),
  413: problem("Body, message or batch too large"),
  416: problem("Offset outside the queue"),
  422: problem("Idempotency-Key reused with a different request"),
  429: problem("Too many long polls are waiting"),
  504: problem("Durability or replication not confirmed in time"),
} as const;

export const NO_CONTENT = { description: "Done; no body" } as const;
