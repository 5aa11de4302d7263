// Stateless consumers (RocketMQ 5's POP): receive a batch with an invisible time and a
// receipt handle each, then ack, nack or extend by handle.
import { createRoute, z } from "@hono/zod-openapi";
import type { ConsumerApi } from "../../runtime/protocol/core_api.ts";
import { readJson } from "./json_body.ts";
import { group, groupParams, readableTopic } from "./params.ts";
import { json, newRoutes, REFUSALS, REFUSED, type RouteDeps, type Routes, serve } from "./route.ts";
import { AckResult, InvisibleUntil, PopMessage, Settled } from "./wire_schemas.ts";

/** Receipt handles per batch ack (RocketMQ's BATCH_ACK). */
export const ACK_BATCH_MAX = 1000;

const TAGS = ["pop"];
const count = z.int().min(0);
const handle = { receiptHandle: z.string() };
const settle = {
  ack: z.object(handle).openapi("Ack"),
  nack: z.object({
    ...handle,
    delayMs: count.nullish().openapi({ description: "Redeliver after this many ms; 0 now" }),
  }).openapi("Nack"),
  visibility: z.object({ ...handle, invisibleMs: count }).openapi("ChangeInvisibleTime"),
};
const ackBatch = z.object({
  receiptHandles: z.array(z.string()).min(1).max(ACK_BATCH_MAX),
}).openapi("AckBatch");

const settled = {
  ack: json("Acknowledged", Settled),
  nack: json("Will be redelivered", Settled),
  visibility: json("The new invisible time", InvisibleUntil),
};
const summaries = {
  ack: "Acknowledge a received message",
  nack: "Give a received message back, to be redelivered after delayMs",
  visibility: "Change a received message's invisible time",
};

export function popRoutes(
  deps: RouteDeps<
    Pick<ConsumerApi, "receive" | "ack" | "ackBatch" | "nack" | "changeInvisibleTime">
  >,
): Routes {
  const { api, allow, limits } = deps;
  const app = newRoutes();
  const receiveBody = z.object({
    topic: z.string(),
    max: count.optional(),
    invisibleMs: count.optional(),
    waitMs: count.max(limits.pullWaitMsMax).optional(),
    clientId: z.string().optional().openapi({ description: "Required by broadcasting groups" }),
  }).strict().openapi("Receive");

  serve(
    app,
    createRoute({
      method: "post",
      path: "/v1/groups/{group}/receive",
      operationId: "receiveMessages",
      tags: TAGS,
      summary: "Receive messages, invisible to others until acked or invisibleMs passes",
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: receiveBody } } },
      },
      responses: {
        200: json(
          "Messages, each with its receipt handle",
          z.object({ messages: z.array(PopMessage) }).openapi("PopMessages"),
        ),
        ...REFUSALS,
        429: REFUSED[429],
      },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      const body = await readJson(c, deps, receiveBody, {
        field: "receive field",
        usage: (path) =>
          path === "topic"
            ? "Cannot receive without topic"
            : path === "waitMs"
            ? `waitMs must be at most ${limits.pullWaitMsMax}`
            : path === "clientId"
            ? "clientId must be 1-255 visible ASCII characters"
            : `${path} must be a non-negative integer`,
      });
      const topic = readableTopic.parse(body.topic);
      allow(c, "subscribe", { topic, group: g });
      const messages = await api.call((b) =>
        b.receive(g, { ...body, topic }, () => c.req.raw.signal)
      );
      return c.json({ messages });
    },
  );

  serve(
    app,
    createRoute({
      method: "post",
      path: "/v1/groups/{group}/ack/batch",
      operationId: "ackBatch",
      tags: TAGS,
      summary: "Acknowledge many received messages; each handle succeeds or fails alone",
      request: {
        params: groupParams,
        body: { required: true, content: { "application/json": { schema: ackBatch } } },
      },
      responses: {
        200: json(
          "Per-handle results",
          z.object({ results: z.array(AckResult) }).openapi("AckResults"),
        ),
        ...REFUSALS,
      },
    }),
    async (c) => {
      const g = group.parse(c.req.param("group")!);
      allow(c, "subscribe", { group: g });
      const body = await readJson(c, deps, ackBatch, {
        field: "ack field",
        usage: () => `Send {"receiptHandles": [...]}: 1-${ACK_BATCH_MAX} strings`,
      });
      return c.json({ results: await api.call((b) => b.ackBatch(g, body.receiptHandles)) });
    },
  );

  for (const action of ["ack", "nack", "visibility"] as const) {
    serve(
      app,
      createRoute({
        method: "post",
        path: `/v1/groups/{group}/${action}`,
        operationId: action === "visibility" ? "changeInvisibleTime" : `${action}Message`,
        tags: TAGS,
        summary: summaries[action],
        request: {
          params: groupParams,
          body: { required: true, content: { "application/json": { schema: settle[action] } } },
        },
        responses: { 200: settled[action], ...REFUSALS, 409: REFUSED[409] },
      }),
      async (c) => {
        const g = group.parse(c.req.param("group")!);
        allow(c, "subscribe", { group: g });
        const body = await readJson(c, deps, settle[action], {
          field: `${action} field`,
          usage: (path) =>
            path === "receiptHandle"
              ? "Cannot settle without receiptHandle"
              : `${path} must be a non-negative integer`,
        });
        const receiptHandle = body.receiptHandle;
        if (action === "ack") {
          await api.call((b) => b.ack(g, receiptHandle));
          return c.json({ receiptHandle, status: "ACKED" });
        }
        if (action === "nack") {
          const delayMs = (body as z.output<typeof settle.nack>).delayMs ?? 0;
          await api.call((b) => b.nack(g, receiptHandle, delayMs));
          return c.json({ receiptHandle, status: "NACKED" });
        }
        const { invisibleMs } = body as z.output<typeof settle.visibility>;
        return c.json({
          receiptHandle,
          ...(await api.call((b) => b.changeInvisibleTime(g, receiptHandle, invisibleMs))),
        });
      },
    );
  }
  return app;
}
