// Moving a cron schedule between broker groups (docs/cluster.md, Drain): a schedule whole
// with its id, creation time and last tick, out of one broker and into another. The cluster
// router's drain calls these on each group's master; admin rights.
import { createRoute, z } from "@hono/zod-openapi";
import type { BrokerClient, ScheduleMoveApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { CronScheduleExport as Export } from "../../runtime/protocol/cluster_types.ts";
import { batchItem, messageFromItem } from "../batch_input.ts";
import { toBase64 } from "../base64.ts";
import { readJson } from "./json_body.ts";
import { text } from "./params.ts";
import { json, newRoutes, REFUSALS, type RouteDeps, type Routes, serve } from "./route.ts";
import { CronScheduleView } from "./wire_schemas.ts";

const TAGS = ["schedules"];
const idParams = z.object({ id: text });

const scheduleExport = z.object({
  id: z.string(),
  topic: z.string(),
  cron: z.string(),
  timeZone: z.string().optional(),
  missedTicks: z.enum(["skip", "fire_once"]).optional(),
  paused: z.boolean().optional(),
  message: batchItem,
  createdAt: z.int(),
  lastTickAt: z.int().nullable(),
}).strict().openapi("CronScheduleExport");

const exportRoute = createRoute({
  method: "get",
  path: "/v1/schedules/{id}/export",
  operationId: "exportSchedule",
  tags: TAGS,
  summary: "A cron schedule whole, to move it to another broker (admin)",
  request: { params: idParams },
  responses: {
    200: json("The schedule, its message's body in base64", scheduleExport),
    ...REFUSALS,
  },
});

const importRoute = createRoute({
  method: "put",
  path: "/v1/schedules/{id}",
  operationId: "importSchedule",
  tags: TAGS,
  summary: "Create a cron schedule with its id, creation time and last tick (admin)",
  request: {
    params: idParams,
    body: { required: true, content: { "application/json": { schema: scheduleExport } } },
  },
  responses: { 200: json("The schedule", CronScheduleView), ...REFUSALS },
});

/** The resolved broker's ScheduleMoveApi; a cluster router has none (it moves schedules
 * itself, calling each group's master). */
function moveOf(b: BrokerClient): ScheduleMoveApi {
  const m = b as Partial<ScheduleMoveApi>;
  if (typeof m.exportSchedule !== "function" || typeof m.importSchedule !== "function") {
    throw new BrokerError(
      "BROKER_UNAVAILABLE",
      "Cannot answer: schedules are exported and imported by each broker's own HTTP port",
    );
  }
  return b as unknown as ScheduleMoveApi;
}

export function scheduleMoveRoutes(deps: RouteDeps<BrokerClient>): Routes {
  const { api, allow, limits } = deps;
  const app = newRoutes();
  serve(app, exportRoute, async (c) => {
    allow(c, "admin");
    const s = await api.call((b) => moveOf(b).exportSchedule(c.req.param("id")!));
    const message = { ...s.message, body: toBase64(s.message.body), bodyEncoding: "base64" };
    return c.json({ ...s, message } as z.infer<typeof scheduleExport>);
  });
  serve(app, importRoute, async (c) => {
    allow(c, "admin");
    const body = await readJson(c, deps, scheduleExport, {
      field: "schedule field",
      usage: (path) => `Cannot read the schedule: ${path} is missing or has the wrong type`,
    });
    const id = c.req.param("id")!;
    if (body.id !== id) {
      throw new BrokerError("INVALID_PARAMETER", `Cannot import schedule ${body.id} as ${id}`);
    }
    const s: Export = { ...body, message: messageFromItem(body.message, limits) };
    return c.json(await api.call((b) => moveOf(b).importSchedule(s)));
  });
  return app;
}
