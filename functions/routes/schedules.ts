// Cron schedules: a message produced to a topic at every tick of a cron expression.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { batchItem, messageFromItem } from "../batch_input.ts";
import { readJson } from "./json_body.ts";
import { text, userTopic } from "./params.ts";
import {
  json,
  newRoutes,
  NO_CONTENT,
  REFUSALS,
  REFUSED,
  type RouteDeps,
  type Routes,
  serve,
} from "./route.ts";
import { CronScheduleView } from "./wire_schemas.ts";

const TAGS = ["schedules"];
const idParams = z.object({ id: text });

const scheduleInput = z.object({
  topic: z.string(),
  cron: z.string().openapi({ example: "*/5 * * * *" }),
  timeZone: z.string().optional().openapi({ description: "IANA time zone; default UTC" }),
  missedTicks: z.enum(["skip", "fire_once"]).optional(),
  paused: z.boolean().optional(),
  message: batchItem,
}).strict().openapi("CronScheduleInput");

export function scheduleRoutes(
  deps: RouteDeps<
    Pick<
      AdminApi,
      "createSchedule" | "listSchedules" | "getSchedule" | "setSchedulePaused" | "deleteSchedule"
    >
  >,
): Routes {
  const { api, allow, permits, limits } = deps;
  const app = newRoutes();

  serve(
    app,
    createRoute({
      method: "post",
      path: "/v1/schedules",
      operationId: "createSchedule",
      tags: TAGS,
      summary: "Create a cron schedule",
      request: {
        body: { required: true, content: { "application/json": { schema: scheduleInput } } },
      },
      responses: { 201: json("Created", CronScheduleView), ...REFUSALS, 413: REFUSED[413] },
    }),
    async (c) => {
      const body = await readJson(c, deps, scheduleInput, {
        field: "schedule field",
        usage: (path) =>
          path === "topic" || path === "cron"
            ? "Cannot create a schedule without topic and cron (strings)"
            : `Cannot read schedule: ${path} has the wrong type`,
      });
      const topic = userTopic.parse(body.topic);
      allow(c, "publish", { topic });
      // The checks past the shape (tags, keys, base64), as for a batch item.
      const message = messageFromItem(body.message, limits);
      if (message.body.length > limits.maxMessageSize) {
        throw new BrokerError(
          "MESSAGE_TOO_LARGE",
          `Cannot store a schedule message over maxMessageSize ${limits.maxMessageSize} bytes`,
        );
      }
      if (
        message.idempotencyKey !== undefined || message.delayMs !== undefined ||
        message.deliverAt !== undefined || message.delayLevel !== undefined
      ) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          "A schedule's message cannot carry idempotencyKey or a delay",
        );
      }
      const view = await api.call((b) => b.createSchedule({ ...body, topic, message }));
      return c.json(view, 201);
    },
  );
  serve(
    app,
    createRoute({
      method: "get",
      path: "/v1/schedules",
      operationId: "listSchedules",
      tags: TAGS,
      summary: "List cron schedules",
      responses: {
        200: json(
          "Every schedule of a topic the API key may see",
          z.object({ schedules: z.array(CronScheduleView) }).openapi("CronSchedules"),
        ),
        ...REFUSALS,
      },
    }),
    async (c) => {
      const schedules = await api.call((b) => b.listSchedules());
      return c.json({ schedules: schedules.filter((s) => permits(c, "see", { topic: s.topic })) });
    },
  );
  serve(
    app,
    createRoute({
      method: "get",
      path: "/v1/schedules/{id}",
      operationId: "getSchedule",
      tags: TAGS,
      summary: "Get a cron schedule",
      request: { params: idParams },
      responses: { 200: json("The schedule", CronScheduleView), ...REFUSALS },
    }),
    async (c) => {
      const schedule = await api.call((b) => b.getSchedule(c.req.param("id")!));
      allow(c, "see", { topic: schedule.topic });
      return c.json(schedule);
    },
  );
  for (const [action, paused] of [["pause", true], ["resume", false]] as const) {
    serve(
      app,
      createRoute({
        method: "post",
        path: `/v1/schedules/{id}/${action}`,
        operationId: `${action}Schedule`,
        tags: TAGS,
        summary: paused ? "Pause a cron schedule" : "Resume a paused cron schedule",
        request: { params: idParams },
        responses: { 200: json("The schedule", CronScheduleView), ...REFUSALS },
      }),
      async (c) => {
        const id = c.req.param("id")!;
        allow(c, "publish", { topic: (await api.call((b) => b.getSchedule(id))).topic });
        return c.json(await api.call((b) => b.setSchedulePaused(id, paused)));
      },
    );
  }
  serve(
    app,
    createRoute({
      method: "delete",
      path: "/v1/schedules/{id}",
      operationId: "deleteSchedule",
      tags: TAGS,
      summary: "Delete a cron schedule",
      request: { params: idParams },
      responses: { 204: NO_CONTENT, ...REFUSALS },
    }),
    async (c) => {
      const id = c.req.param("id")!;
      allow(c, "publish", { topic: (await api.call((b) => b.getSchedule(id))).topic });
      await api.call((b) => b.deleteSchedule(id));
      return c.body(null, 204);
    },
  );
  return app;
}
