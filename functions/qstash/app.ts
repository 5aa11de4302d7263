// The QStash-compatible API (docs/qstash.md): the routes @upstash/qstash 2.12.0 calls, as
// their own Hono app mounted at /v2 by functions/app.ts, over the core API and QstashApi.
// Errors answer QStash's way: the status, and {"error": "..."}.
import { type Context, Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { readBody } from "../body.ts";
import type { Env } from "../routes/route.ts";
import { parseQstashHeaders } from "./headers.ts";
import { batchRoutes } from "./batch.ts";
import { dlqRoutes } from "./dlq.ts";
import { eventRoutes } from "./events.ts";
import { flowControlRoutes } from "./flow_control.ts";
import { messageRoutes } from "./messages.ts";
import { Plumbing, type QstashDeps } from "./plumbing.ts";
import { publishOne, type PublishResult } from "./publish.ts";
import { queueRoutes } from "./queues.ts";
import { scheduleRoutes } from "./schedules.ts";
import { urlGroupRoutes } from "./url_groups.ts";

export type { QstashDeps } from "./plumbing.ts";

export function qstashApp(
  deps: QstashDeps,
  log: (level: "error", msg: string, fields: Record<string, unknown>) => void,
): Hono<Env> {
  const app = new Hono<Env>();
  const plumbing = new Plumbing(deps);
  app.onError((err, c) => {
    if (!(err instanceof BrokerError)) {
      log("error", "unhandled error in a QStash request", { err: String(err), path: c.req.path });
    }
    const e = err instanceof BrokerError ? err : new BrokerError("INTERNAL", "Internal error");
    return c.json({ error: e.message }, e.status as 400);
  });

  app.get("/keys", async (c) => {
    deps.allow(c, "admin");
    return c.json(await deps.qstash.qstashSigningKeys());
  });
  app.post("/keys/rotate", async (c) => {
    deps.allow(c, "admin");
    return c.json(await deps.qstash.rotateQstashSigningKeys());
  });

  const publish = async (c: Context<Env>, queue?: string) => {
    const prefix = queue === undefined ? "/v2/publish/" : `/v2/enqueue/${queue}/`;
    const destination = rawRest(c.req.url, prefix);
    const s = await plumbing.settings();
    const options = parseQstashHeaders(c.req.raw.headers, "publish", s.retriesMax);
    const body = await readBody(c.req.raw, deps.limits.maxMessageSize, deps.deadlines);
    const result = await publishOne(c, deps, plumbing, destination, options, body, queue);
    return c.json(result, deduplicated(result) ? 202 : 200);
  };
  app.post("/publish/*", (c) => publish(c));
  app.post("/enqueue/:queue/*", (c) => publish(c, c.req.param("queue")));

  batchRoutes(app, deps, plumbing);
  queueRoutes(app, deps, plumbing);
  scheduleRoutes(app, deps, plumbing);
  messageRoutes(app, deps, plumbing);
  dlqRoutes(app, deps, plumbing);
  eventRoutes(app, deps);
  flowControlRoutes(app, deps);
  urlGroupRoutes(app, deps, plumbing);
  return app;
}

/** The destination: the raw path after `prefix` (a URL keeps its `//`) and the query. */
function rawRest(requestUrl: string, prefix: string): string {
  // The request URL as served is already normalised (scheme://host/path?query, no
  // fragment): the path starts at the first "/" after the authority.
  const path = requestUrl.indexOf("/", requestUrl.indexOf("//") + 2);
  const at = requestUrl.indexOf(prefix, path);
  const rest = at < 0 ? "" : requestUrl.slice(at + prefix.length);
  if (rest === "" || rest[0] === "?") {
    throw new BrokerError("INVALID_PARAMETER", "A destination is required");
  }
  return rest;
}

function deduplicated(r: PublishResult | PublishResult[]): boolean {
  return Array.isArray(r) ? r.length > 0 && r.every((x) => x.deduplicated) : !!r.deduplicated;
}
