// Pull by offset with long polling (RocketMQ's PullMessage): held until a message arrives
// or waitMs passes.
import { createRoute, z } from "@hono/zod-openapi";
import type { ConsumerApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { group, intText, optionalText, queueId, readableTopic } from "./params.ts";
import { json, newRoutes, REFUSALS, REFUSED, type RouteDeps, type Routes, serve } from "./route.ts";
import { PullResult } from "./wire_schemas.ts";

export function pullRoutes(deps: RouteDeps<Pick<ConsumerApi, "pull">>): Routes {
  const { api, allow, limits } = deps;
  const app = newRoutes();
  const query = {
    offset: intText("offset").openapi({
      description: "The queue offset to read from",
      // Required, but checked after the API key's rights, with its own message.
      param: { required: true },
    }),
    max: intText("max", limits.pullMsgNumsMax).openapi({ description: "At least 1" }),
    waitMs: intText("waitMs", limits.pullWaitMsMax),
    tags: optionalText.openapi({ description: 'Tag expression: "*" or "TagA || TagB"' }),
    group: group.optional().openapi({ description: "Commit this group's offset to nextOffset" }),
  };
  const pull = createRoute({
    method: "get",
    path: "/v1/topics/{topic}/queues/{queueId}/messages",
    operationId: "pullMessages",
    tags: ["pull"],
    summary: "Pull by offset with long polling",
    request: {
      params: z.object({ topic: readableTopic, queueId }),
      query: z.object(query),
    },
    responses: {
      200: json("Messages from the offset on, or none after waitMs", PullResult),
      ...REFUSALS,
      416: REFUSED[416],
      429: REFUSED[429],
    },
  });

  serve(app, pull, async (c) => {
    const topic = readableTopic.parse(c.req.param("topic")!);
    const id = queueId.parse(c.req.param("queueId")!);
    const g = query.group.parse(c.req.query("group"));
    allow(c, "subscribe", { topic, group: g });
    const offset = query.offset.parse(c.req.query("offset"));
    if (offset === undefined) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot pull without offset (use GET /v1/groups/{group}/offsets/{topic} to find one)",
      );
    }
    const max = query.max.parse(c.req.query("max"));
    if (max === 0) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot pull max=0: use 1-${limits.pullMsgNumsMax}`,
      );
    }
    const waitMs = query.waitMs.parse(c.req.query("waitMs"));
    const tags = c.req.query("tags");
    const result = await api.call((b) =>
      b.pull(topic, id, { offset, max, waitMs, tags, group: g }, () => c.req.raw.signal)
    );
    return c.json(result);
  });

  return app;
}
