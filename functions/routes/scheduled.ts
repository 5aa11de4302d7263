// Scheduled messages (produced with a delay or a delivery time): cancel or reschedule one
// by id, or cancel those of a key.
import { createRoute, z } from "@hono/zod-openapi";
import type { ProducerApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { readJson } from "./json_body.ts";
import { optionalText, text, userTopic } from "./params.ts";
import { json, newRoutes, REFUSALS, REFUSED, type RouteDeps, type Routes, serve } from "./route.ts";
import { ScheduledOutcome } from "./wire_schemas.ts";

const TAGS = ["scheduled"];
const messageParams = z.object({ topic: userTopic, messageId: text });
const reschedule = z.object({ deliverAt: z.int() }).strict().openapi("Reschedule");
// Required, with its own message when missing.
const byKeyQuery = { key: optionalText.openapi({ param: { required: true } }) };

const cancel = createRoute({
  method: "delete",
  path: "/v1/topics/{topic}/scheduled/{messageId}",
  operationId: "cancelScheduled",
  tags: TAGS,
  summary: "Cancel a scheduled message before its delivery",
  request: { params: messageParams },
  responses: { 200: json("Cancelled", ScheduledOutcome), ...REFUSALS, 409: REFUSED[409] },
});

const move = createRoute({
  method: "put",
  path: "/v1/topics/{topic}/scheduled/{messageId}",
  operationId: "rescheduleScheduled",
  tags: TAGS,
  summary: "Move a scheduled message's delivery time",
  request: {
    params: messageParams,
    body: { required: true, content: { "application/json": { schema: reschedule } } },
  },
  responses: { 200: json("Rescheduled", ScheduledOutcome), ...REFUSALS, 409: REFUSED[409] },
});

const cancelByKey = createRoute({
  method: "delete",
  path: "/v1/topics/{topic}/scheduled",
  operationId: "cancelScheduledByKey",
  tags: TAGS,
  summary: "Cancel the scheduled messages produced with a key",
  request: { params: z.object({ topic: userTopic }), query: z.object(byKeyQuery) },
  responses: {
    200: json(
      "Those cancelled",
      z.object({ cancelled: z.array(ScheduledOutcome) }).openapi("CancelledScheduled"),
    ),
    ...REFUSALS,
  },
});

export function scheduledRoutes(
  deps: RouteDeps<
    Pick<ProducerApi, "cancelScheduled" | "cancelScheduledByKey" | "rescheduleScheduled">
  >,
): Routes {
  const { api, allow } = deps;
  const app = newRoutes();
  serve(app, cancel, async (c) => {
    const topic = userTopic.parse(c.req.param("topic")!);
    allow(c, "publish", { topic });
    return c.json(await api.call((b) => b.cancelScheduled(topic, c.req.param("messageId")!)));
  });
  serve(app, move, async (c) => {
    const topic = userTopic.parse(c.req.param("topic")!);
    allow(c, "publish", { topic });
    const body = await readJson(c, deps, reschedule, {
      field: "reschedule field",
      usage: () => 'Cannot reschedule: send {"deliverAt": <epoch ms>}',
    });
    const id = c.req.param("messageId")!;
    return c.json(await api.call((b) => b.rescheduleScheduled(topic, id, body.deliverAt)));
  });
  serve(app, cancelByKey, async (c) => {
    const topic = userTopic.parse(c.req.param("topic")!);
    allow(c, "publish", { topic });
    const key = c.req.query("key");
    if (!key) throw new BrokerError("INVALID_PARAMETER", "Cannot cancel by key without ?key=");
    return c.json({ cancelled: await api.call((b) => b.cancelScheduledByKey(topic, key)) });
  });
  return app;
}
