// Events: our delivery log of every "qstash" subscription, newest first, as QStash's
// LogPayload.
import type { Hono } from "hono";
import type { Env } from "../routes/route.ts";
import { onlyParams } from "./dlq.ts";
import { qstashGroupsOf } from "./messages.ts";
import type { QstashDeps } from "./plumbing.ts";

export function eventRoutes(app: Hono<Env>, deps: QstashDeps) {
  const { api, allow } = deps;
  const qstashGroups = () => qstashGroupsOf(deps);
  app.get("/events", async (c) => {
    allow(c, "admin");
    onlyParams(c, ["messageIds", "count", "cursor"]);
    const wanted = c.req.queries("messageIds");
    const count = Math.min(Number(c.req.query("count") ?? 100) || 100, 1000);
    const events = [];
    for (const s of await qstashGroups()) {
      for (const a of await api.call((b) => b.listDeliveries(s.group, { limit: 1000 }))) {
        if (wanted && !wanted.includes(a.messageId)) continue;
        events.push({
          time: a.at,
          state: STATES[a.outcome],
          messageId: a.messageId,
          url: s.url,
          header: {},
          ...(a.error ? { error: a.error } : {}),
          responseStatus: a.status,
        });
      }
    }
    events.sort((a, b) => b.time - a.time);
    return c.json({ events: events.slice(0, count) });
  });
}

const STATES = {
  "delivered": "DELIVERED",
  "retry": "RETRY",
  "throttled": "RETRY",
  "dead-lettered": "FAILED",
  "disabled": "ERROR",
} as const;
