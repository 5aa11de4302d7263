// OpenAPI 3.1 description of the public API, served at /openapi.json. A test checks its
// paths and methods against the routes the Hono app really has.

const problem = {
  description: "Refused: application/problem+json with a stable `type`",
  content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
};
const json = (description: string, schema: Record<string, unknown> = { type: "object" }) => ({
  description,
  content: { "application/json": { schema } },
});
const topic = {
  name: "topic",
  in: "path",
  required: true,
  schema: { type: "string", pattern: "^[%|a-zA-Z0-9_-]{1,127}$" },
};
const group = {
  name: "group",
  in: "path",
  required: true,
  schema: { type: "string", pattern: "^[|a-zA-Z0-9_-]{1,120}$" },
};
const queueId = {
  name: "queueId",
  in: "path",
  required: true,
  schema: { type: "integer", minimum: 0 },
};
const errors = {
  "400": problem,
  "401": problem,
  "403": problem,
  "404": problem,
  "413": problem,
  "503": problem,
};

export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "edgemq",
      version: "0.1.0",
      description: "A RocketMQ-grade message broker for Deno and Bun, made for the edge.",
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        Problem: {
          type: "object",
          required: ["type", "title", "status", "detail", "code"],
          properties: {
            type: { type: "string" },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
            code: { type: "string" },
          },
        },
        ProduceResult: {
          type: "object",
          properties: {
            messageId: { type: "string" },
            topic: { type: "string" },
            queueId: { type: "integer" },
            queueOffset: { type: "integer" },
            commitLogOffset: { type: "integer" },
            storeTimestamp: { type: "integer" },
            durability: { enum: ["WRITTEN", "FLUSHED"] },
          },
        },
        PullResult: {
          type: "object",
          properties: {
            status: { enum: ["FOUND", "NO_NEW_MESSAGE", "NO_MATCHED_MESSAGE"] },
            messages: { type: "array", items: { $ref: "#/components/schemas/Message" } },
            nextOffset: { type: "integer" },
            minOffset: { type: "integer" },
            maxOffset: { type: "integer" },
          },
        },
        Message: {
          type: "object",
          properties: {
            messageId: { type: "string" },
            queueOffset: { type: "integer" },
            body: { type: "string" },
            bodyEncoding: { enum: ["utf8", "base64"] },
            tag: { type: "string" },
            keys: { type: "array", items: { type: "string" } },
            properties: { type: "object", additionalProperties: { type: "string" } },
            storeTimestamp: { type: "integer" },
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths: {
      "/healthz": {
        get: { summary: "Health", security: [], responses: { "200": json("Broker health") } },
      },
      "/openapi.json": {
        get: { summary: "This document", security: [], responses: { "200": json("OpenAPI 3.1") } },
      },
      "/metrics": {
        get: {
          summary: "Prometheus metrics",
          security: [],
          responses: { "200": { description: "text/plain exposition" } },
        },
      },
      "/v1/topics": {
        get: { summary: "List topics", responses: { "200": json("Topics"), ...errors } },
      },
      "/v1/topics/{topic}": {
        parameters: [topic],
        get: { summary: "Get a topic", responses: { "200": json("Topic"), ...errors } },
        put: {
          summary: "Create or update a topic",
          requestBody: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: {
                    readQueueNums: { type: "integer" },
                    writeQueueNums: { type: "integer" },
                    perm: { type: "integer", minimum: 0, maximum: 7 },
                    order: { type: "boolean" },
                  },
                },
              },
            },
          },
          responses: { "200": json("Topic"), ...errors },
        },
        delete: {
          summary: "Delete a topic",
          responses: { "204": { description: "Deleted" }, ...errors },
        },
      },
      "/v1/topics/{topic}/messages": {
        parameters: [topic],
        post: {
          summary: "Produce one message: the raw body is the message body",
          parameters: [
            "Mq-Tag",
            "Mq-Keys",
            "Mq-Sharding-Key",
            "Mq-Queue-Id",
            "Mq-Delay-Ms",
            "Mq-Deliver-At",
            "Idempotency-Key",
          ].map((name) => ({ name, in: "header", schema: { type: "string" } })),
          requestBody: { content: { "*/*": { schema: { type: "string", format: "binary" } } } },
          responses: {
            "201": json("Stored", { $ref: "#/components/schemas/ProduceResult" }),
            "200": json("Idempotent replay"),
            ...errors,
          },
        },
        get: {
          summary: "Find messages by key or time range",
          parameters: ["key", "begin", "end", "max"].map((name) => ({
            name,
            in: "query",
            schema: { type: "string" },
          })),
          responses: { "200": json("Messages"), ...errors },
        },
      },
      "/v1/topics/{topic}/messages/batch": {
        parameters: [topic],
        post: {
          summary: "Produce many messages; each item succeeds or fails alone",
          requestBody: {
            content: { "application/json": { schema: { type: "object", required: ["messages"] } } },
          },
          responses: { "200": json("Per-item results"), ...errors },
        },
      },
      "/v1/topics/{topic}/queues/{queueId}/messages": {
        parameters: [topic, queueId],
        get: {
          summary: "Pull by offset with long polling",
          parameters: ["offset", "max", "waitMs", "tags", "group"].map((name) => ({
            name,
            in: "query",
            required: name === "offset",
            schema: { type: "string" },
          })),
          responses: {
            "200": json("Messages", { $ref: "#/components/schemas/PullResult" }),
            "416": problem,
            ...errors,
          },
        },
      },
      "/v1/messages/{messageId}": {
        parameters: [{
          name: "messageId",
          in: "path",
          required: true,
          schema: { type: "string", pattern: "^[0-9A-F]{32}$" },
        }],
        get: {
          summary: "Find a message by unique id",
          responses: {
            "200": json("Message", { $ref: "#/components/schemas/Message" }),
            ...errors,
          },
        },
      },
      "/v1/topics/{topic}/scheduled": {
        parameters: [topic],
        delete: {
          summary: "Cancel every pending scheduled message with a key",
          parameters: [{ name: "key", in: "query", required: true, schema: { type: "string" } }],
          responses: { "200": json("Cancelled"), ...errors },
        },
      },
      "/v1/topics/{topic}/scheduled/{messageId}": {
        parameters: [topic, {
          name: "messageId",
          in: "path",
          required: true,
          schema: { type: "string" },
        }],
        delete: {
          summary: "Cancel a scheduled message before it is delivered",
          responses: { "200": json("Cancelled"), "409": problem, ...errors },
        },
        put: {
          summary: "Move a scheduled message to a new time",
          requestBody: {
            content: {
              "application/json": { schema: { type: "object", required: ["deliverAt"] } },
            },
          },
          responses: { "200": json("Rescheduled"), "409": problem, ...errors },
        },
      },
      "/v1/schedules": {
        get: { summary: "List cron schedules", responses: { "200": json("Schedules"), ...errors } },
        post: {
          summary: "Create a cron schedule that publishes a message to a topic",
          requestBody: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["topic", "cron", "message"],
                  properties: {
                    topic: { type: "string" },
                    cron: { type: "string" },
                    timeZone: { type: "string" },
                    missedTicks: { enum: ["skip", "fire_once"] },
                    paused: { type: "boolean" },
                    message: { type: "object" },
                  },
                },
              },
            },
          },
          responses: { "201": json("Schedule"), ...errors },
        },
      },
      "/v1/schedules/{id}": {
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        get: { summary: "Get a schedule", responses: { "200": json("Schedule"), ...errors } },
        delete: {
          summary: "Delete a schedule",
          responses: { "204": { description: "Deleted" }, ...errors },
        },
      },
      "/v1/schedules/{id}/pause": {
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        post: { summary: "Pause a schedule", responses: { "200": json("Schedule"), ...errors } },
      },
      "/v1/schedules/{id}/resume": {
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        post: {
          summary: "Resume a schedule (ticks that fell while paused are not published)",
          responses: { "200": json("Schedule"), ...errors },
        },
      },
      "/v1/subscriptions": {
        get: {
          summary: "List webhook subscriptions (secrets masked)",
          responses: { "200": json("Subscriptions"), ...errors },
        },
      },
      "/v1/subscriptions/{group}": {
        parameters: [group],
        put: {
          summary:
            "Create or replace a group's webhook subscription: topic, tags, url, secrets, headers, timeoutMs, maxConcurrency, ratePerSec, ordered, retryMaxTimes, retryBackoffMs, startFrom, failureCallbackUrl. The answer shows the secrets.",
          requestBody: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["topic", "url"],
                  properties: {
                    topic: { type: "string" },
                    tags: { type: "string" },
                    url: { type: "string", format: "uri" },
                    secrets: { type: "array", items: { type: "string", pattern: "^whsec_" } },
                    headers: { type: "object", additionalProperties: { type: "string" } },
                    timeoutMs: { type: "integer", minimum: 1 },
                    maxConcurrency: { type: "integer", minimum: 1 },
                    ratePerSec: { type: "integer", minimum: 0 },
                    ordered: { type: "boolean" },
                    retryMaxTimes: { type: "integer", minimum: 0 },
                    retryBackoffMs: { type: ["array", "null"], items: { type: "integer" } },
                    startFrom: {
                      oneOf: [{ enum: ["latest", "earliest"] }, { type: "integer" }],
                    },
                    failureCallbackUrl: { type: ["string", "null"], format: "uri" },
                  },
                },
              },
            },
          },
          responses: { "200": json("Subscription, secrets shown"), ...errors },
        },
        get: {
          summary: "A subscription, its status and delivery stats",
          responses: { "200": json("Subscription"), ...errors },
        },
        delete: {
          summary: "Delete a subscription (the group and its offsets stay)",
          responses: { "204": { description: "Deleted" }, ...errors },
        },
      },
      "/v1/subscriptions/{group}/pause": {
        parameters: [group],
        post: {
          summary: "Pause deliveries (those in flight finish)",
          responses: { "200": json("Subscription"), ...errors },
        },
      },
      "/v1/subscriptions/{group}/resume": {
        parameters: [group],
        post: {
          summary: "Resume deliveries, also after the endpoint disabled it with 410",
          responses: { "200": json("Subscription"), ...errors },
        },
      },
      "/v1/subscriptions/{group}/replay": {
        parameters: [group],
        post: {
          summary: "Deliver again everything stored since {timestamp} (ms)",
          responses: { "200": json("Subscription"), ...errors },
        },
      },
      "/v1/subscriptions/{group}/deliveries": {
        parameters: [
          group,
          { name: "messageId", in: "query", schema: { type: "string" } },
          { name: "limit", in: "query", schema: { type: "integer", minimum: 1 } },
        ],
        get: {
          summary: "The delivery log: recent attempts, newest first (memory; bounded)",
          responses: { "200": json("Deliveries"), ...errors },
        },
      },
      "/v1/groups/{group}": {
        parameters: [group],
        put: {
          summary:
            "Create a consumer group or replace its settings (messageModel, consumeFromWhere, retryMaxTimes, retryBackoffMs, orderly)",
          responses: { "200": json("Group"), ...errors },
        },
        get: {
          summary: "A consumer group's settings",
          responses: { "200": json("Group"), ...errors },
        },
      },
      "/v1/groups/{group}/heartbeat": {
        parameters: [group],
        post: {
          summary: "A long-lived consumer's heartbeat: client id, subscriptions, strategy",
          responses: { "200": json("Members and generation"), ...errors },
        },
      },
      "/v1/groups/{group}/members/{clientId}": {
        parameters: [group, {
          name: "clientId",
          in: "path",
          required: true,
          schema: { type: "string" },
        }],
        delete: { summary: "Leave the group", responses: { "200": json("Members"), ...errors } },
      },
      "/v1/groups/{group}/assignment": {
        parameters: [group],
        get: {
          summary: "The queues a member should consume now (RocketMQ's allocation strategies)",
          parameters: ["clientId", "topic"].map((name) => ({
            name,
            in: "query",
            required: true,
            schema: { type: "string" },
          })),
          responses: { "200": json("Assignment"), ...errors },
        },
      },
      "/v1/groups/{group}/lock": {
        parameters: [group],
        post: {
          summary: "Lock queues for ordered consumption (60 s, renew by locking again)",
          responses: { "200": json("Queues held"), ...errors },
        },
      },
      "/v1/groups/{group}/unlock": {
        parameters: [group],
        post: { summary: "Release queue locks", responses: { "200": json("Released"), ...errors } },
      },
      "/v1/groups/{group}/dlq": {
        parameters: [group],
        get: {
          summary: "List dead letters (original topic shown)",
          responses: { "200": json("Messages"), ...errors },
        },
        delete: {
          summary: "Purge the dead letters",
          responses: { "200": json("Purged"), ...errors },
        },
      },
      "/v1/groups/{group}/dlq/redrive": {
        parameters: [group],
        post: {
          summary: "Put dead letters back on their original topic",
          responses: { "200": json("Redriven"), ...errors },
        },
      },
      "/v1/groups/{group}/receive": {
        parameters: [group],
        post: {
          summary:
            "POP receive: messages with receipt handles, invisible to others until settled or invisibleMs passes",
          requestBody: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["topic"],
                  properties: {
                    topic: { type: "string" },
                    max: { type: "integer" },
                    invisibleMs: { type: "integer" },
                    waitMs: { type: "integer" },
                  },
                },
              },
            },
          },
          responses: { "200": json("Messages"), ...errors },
        },
      },
      "/v1/groups/{group}/ack": {
        parameters: [group],
        post: {
          summary: "Acknowledge a received message",
          requestBody: {
            content: {
              "application/json": { schema: { type: "object", required: ["receiptHandle"] } },
            },
          },
          responses: { "200": json("Acked"), "409": problem, ...errors },
        },
      },
      "/v1/groups/{group}/ack/batch": {
        parameters: [group],
        post: {
          summary: "Acknowledge many received messages; each succeeds or fails alone",
          responses: { "200": json("Per-handle results"), ...errors },
        },
      },
      "/v1/groups/{group}/nack": {
        parameters: [group],
        post: {
          summary: "Give a message back (after delayMs); it returns with reconsumeTimes + 1",
          requestBody: {
            content: {
              "application/json": { schema: { type: "object", required: ["receiptHandle"] } },
            },
          },
          responses: { "200": json("Nacked"), "409": problem, ...errors },
        },
      },
      "/v1/groups/{group}/visibility": {
        parameters: [group],
        post: {
          summary: "Change a received message's invisible time",
          requestBody: {
            content: {
              "application/json": {
                schema: { type: "object", required: ["receiptHandle", "invisibleMs"] },
              },
            },
          },
          responses: { "200": json("New deadline"), "409": problem, ...errors },
        },
      },
      "/v1/groups/{group}/offsets/{topic}": {
        parameters: [group, topic],
        get: {
          summary: "Offsets and lag per queue",
          responses: { "200": json("Offsets"), ...errors },
        },
        put: {
          summary: "Reset offsets to a time",
          requestBody: {
            content: {
              "application/json": { schema: { type: "object", required: ["timestamp"] } },
            },
          },
          responses: { "200": json("Offsets"), ...errors },
        },
      },
      "/v1/groups/{group}/offsets/{topic}/{queueId}": {
        parameters: [group, topic, queueId],
        get: { summary: "Offset of one queue", responses: { "200": json("Offset"), ...errors } },
        put: {
          summary: "Commit an offset",
          requestBody: {
            content: { "application/json": { schema: { type: "object", required: ["offset"] } } },
          },
          responses: { "200": json("Offset"), "416": problem, ...errors },
        },
      },
    },
  };
}
