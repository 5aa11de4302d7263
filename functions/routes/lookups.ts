// Finding messages: by key or time range within a topic, and by message id.
import { createRoute, z } from "@hono/zod-openapi";
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QUERY_MESSAGE_NUMS_CEILING } from "../../runtime/protocol/limits.ts";
import { intText, optionalText, readableTopic, text } from "./params.ts";
import { json, newRoutes, REFUSALS, type RouteDeps, type Routes, serve } from "./route.ts";
import { Message, Messages } from "./wire_schemas.ts";

const TAGS = ["lookups"];

const findQuery = {
  key: optionalText.openapi({ description: "A key the message was produced with" }),
  begin: intText("begin").openapi({ description: "Stored at or after (epoch ms)" }),
  end: intText("end").openapi({ description: "Stored before (epoch ms)" }),
  max: intText("max", QUERY_MESSAGE_NUMS_CEILING),
};

const find = createRoute({
  method: "get",
  path: "/v1/topics/{topic}/messages",
  operationId: "findMessages",
  tags: TAGS,
  summary: "Find messages by key or time range (key or begin is required)",
  request: { params: z.object({ topic: readableTopic }), query: z.object(findQuery) },
  responses: { 200: json("Matching messages", Messages), ...REFUSALS },
});

const byIdQuery = { topic: readableTopic.optional() };

const byId = createRoute({
  method: "get",
  path: "/v1/messages/{messageId}",
  operationId: "getMessage",
  tags: TAGS,
  summary: "Get a message by its id",
  request: {
    params: z.object({ messageId: text.openapi({ description: "32 upper-case hex characters" }) }),
    query: z.object(byIdQuery),
  },
  responses: { 200: json("The message", Message), ...REFUSALS },
});

export function lookupRoutes(
  deps: RouteDeps<Pick<AdminApi, "findMessages" | "getMessageById">>,
): Routes {
  const { api, allow } = deps;
  const app = newRoutes();

  serve(app, find, async (c) => {
    const topic = readableTopic.parse(c.req.param("topic")!);
    allow(c, "subscribe", { topic });
    const key = c.req.query("key");
    const beginTimestamp = findQuery.begin.parse(c.req.query("begin"));
    const endTimestamp = findQuery.end.parse(c.req.query("end"));
    const maxNum = findQuery.max.parse(c.req.query("max"));
    if (key === undefined && beginTimestamp === undefined) {
      throw new BrokerError("INVALID_PARAMETER", "Cannot search without key or begin (epoch ms)");
    }
    const messages = await api.call((b) =>
      b.findMessages(topic, { key, beginTimestamp, endTimestamp, maxNum })
    );
    return c.json({ messages });
  });

  serve(app, byId, async (c) => {
    const topic = byIdQuery.topic.parse(c.req.query("topic"));
    const message = await api.call((b) => b.getMessageById(c.req.param("messageId")!, topic));
    allow(c, "subscribe", { topic: message.topic });
    return c.json(message);
  });

  return app;
}
