// Schedules: our cron service, producing the message a publish would (with its qstash.*
// properties) to the destination's topic at every tick. `CRON_TZ=<zone> ` picks the zone.
import type { Context, Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  QSTASH_FLOW_PREFIX,
  QSTASH_PROPERTY,
  QSTASH_PUBLISH_TOPIC,
  QSTASH_QUEUE_PREFIX,
  QSTASH_URL_GROUP_PREFIX,
  type QstashScheduleDetails,
} from "../../runtime/protocol/qstash.ts";
import type { CronScheduleView } from "../../runtime/protocol/types.ts";
import { readBody } from "../body.ts";
import type { Env } from "../routes/route.ts";
import { parseQstashHeaders } from "./headers.ts";
import type { Plumbing, QstashDeps } from "./plumbing.ts";
import { qstashMessage } from "./publish.ts";

export function scheduleRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  const { api, allow } = deps;
  app.post("/schedules/*", async (c) => {
    const path = new URL(c.req.url).pathname;
    const pause = /^\/v2\/schedules\/([^/]+)\/(pause|resume)$/.exec(path);
    if (pause) return setPaused(c, pause[1], pause[2] === "pause");
    allow(c, "admin");
    const destination = path.slice(path.indexOf("/v2/schedules/") + 14) +
      new URL(c.req.url).search;
    const s = await plumbing.settings();
    const o = parseQstashHeaders(c.req.raw.headers, "schedule", s.retriesMax);
    if (o.cron === undefined) throw new BrokerError("INVALID_HEADER", "Upstash-Cron is required");
    const body = await readBody(c.req.raw, deps.limits.maxMessageSize, deps.deadlines);
    const { topic, message } = await qstashMessage(
      deps,
      plumbing,
      destination,
      o,
      body,
      o.queueName,
      () => {}, // creating a schedule needs admin, checked above
    );
    const tz = /^CRON_TZ=(\S+)\s+(.*)$/.exec(o.cron);
    const view = await api.call((b) =>
      b.createSchedule({
        topic,
        cron: tz ? tz[2] : o.cron!,
        ...(tz ? { timeZone: tz[1] } : {}),
        message,
      })
    );
    return c.json({ scheduleId: view.id });
  });
  app.get("/schedules", async (c) => {
    allow(c, "admin");
    const all = await api.call((b) => b.listSchedules());
    const ours = all.filter((v) => isQstashTopic(v.topic));
    return c.json(await Promise.all(ours.map(view)));
  });
  app.get("/schedules/:id", async (c) => {
    allow(c, "admin");
    return c.json(await view(await api.call((b) => b.getSchedule(c.req.param("id")))));
  });
  app.delete("/schedules/:id", async (c) => {
    allow(c, "admin");
    await api.call((b) => b.deleteSchedule(c.req.param("id")));
    return c.body(null, 200);
  });
  const view = async (v: CronScheduleView) =>
    scheduleView(
      v,
      await deps.qstash.qstashSchedule(v.id),
      (await plumbing.settings()).retriesDefault,
    );
  const setPaused = async (
    c: Context<Env>,
    id: string,
    paused: boolean,
  ) => {
    allow(c, "admin");
    await api.call((b) => b.setSchedulePaused(id, paused));
    return c.body(null, 200);
  };
  for (const action of ["pause", "resume"] as const) {
    app.patch(
      `/schedules/:id/${action}`,
      (c) => setPaused(c, c.req.param("id"), action === "pause"),
    );
  }
}

function isQstashTopic(topic: string): boolean {
  return topic === QSTASH_PUBLISH_TOPIC || topic.startsWith(QSTASH_QUEUE_PREFIX) ||
    topic.startsWith(QSTASH_URL_GROUP_PREFIX) || topic.startsWith(QSTASH_FLOW_PREFIX);
}

/** QStash's Schedule from our cron schedule and the message it publishes. */
function scheduleView(v: CronScheduleView, d: QstashScheduleDetails, retriesDefault: number) {
  const p = d.properties;
  const destination = p[QSTASH_PROPERTY.url] ??
    (v.topic.startsWith(QSTASH_URL_GROUP_PREFIX)
      ? v.topic.slice(QSTASH_URL_GROUP_PREFIX.length)
      : "");
  const bytes = Uint8Array.from(atob(d.body), (ch) => ch.charCodeAt(0));
  let body: { body: string } | { bodyBase64: string };
  try {
    body = { body: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    body = { bodyBase64: d.body };
  }
  const header: Record<string, string[]> = {};
  if (d.contentType) header["Content-Type"] = [d.contentType];
  const forwarded = p[QSTASH_PROPERTY.headers];
  if (forwarded) {
    for (const [k, value] of Object.entries(JSON.parse(forwarded))) header[k] = [String(value)];
  }
  return {
    scheduleId: v.id,
    cron: v.timeZone === "UTC" ? v.cron : `CRON_TZ=${v.timeZone} ${v.cron}`,
    createdAt: d.createdAt,
    destination,
    method: p[QSTASH_PROPERTY.method] ?? "POST",
    header,
    ...body,
    retries: Number(p[QSTASH_PROPERTY.retries] ?? retriesDefault),
    ...(p[QSTASH_PROPERTY.callback] ? { callback: p[QSTASH_PROPERTY.callback] } : {}),
    ...(p[QSTASH_PROPERTY.failureCallback]
      ? { failureCallback: p[QSTASH_PROPERTY.failureCallback] }
      : {}),
    isPaused: v.paused,
    ...(v.topic.startsWith(QSTASH_QUEUE_PREFIX)
      ? { queueName: v.topic.slice(QSTASH_QUEUE_PREFIX.length) }
      : {}),
    ...(v.lastTickAt !== null ? { lastScheduleTime: v.lastTickAt } : {}),
    ...(v.nextTickAt !== null ? { nextScheduleTime: v.nextTickAt } : {}),
  };
}
