// Producing: one message whose raw body is the message body (the hot path, its handler in
// produce_one.ts), and a JSON batch whose items succeed or fail alone.
import { createRoute, z } from "@hono/zod-openapi";
import type { ProducerApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { checkUserTopic } from "../../runtime/protocol/names.ts";
import type { BatchItemResult, ProduceMessage } from "../../runtime/protocol/types.ts";
import { readBody } from "../body.ts";
import {
  BATCH_FRAME_TYPE,
  decodeBatchFrame,
  type FrameItem,
} from "../../runtime/protocol/batch_frame.ts";
import { messageFromFrameItem } from "../frame_input.ts";
import { batchEnvelope, batchItem, messageFromItem } from "../batch_input.ts";
import { produceOne } from "./produce_one.ts";
import { parseJson } from "./json_body.ts";
import { topicParams } from "./params.ts";
import { json, newRoutes, REFUSALS, REFUSED, type RouteDeps, type Routes, serve } from "./route.ts";
import { BatchResult, Problem, ProduceResult as ProduceResultSchema } from "./wire_schemas.ts";

const TAGS = ["messages"];

/** The headers a produce reads; produce_input.ts checks them. */
const produceHeaders = z.object({
  "Mq-Tag": z.string().optional().openapi({ description: "One tag, for consumers' filters" }),
  "Mq-Keys": z.string().optional().openapi({
    description: "Keys to look the message up by, space-separated",
  }),
  "Mq-Sharding-Key": z.string().optional().openapi({
    description: "Messages of one key go to one queue, in order",
  }),
  "Mq-Queue-Id": z.string().optional().openapi({
    type: "integer",
    minimum: 0,
    description: "An explicit queue",
  }),
  "Mq-Delay-Ms": z.string().optional().openapi({
    type: "integer",
    minimum: 0,
    description: "Deliver after this many ms",
  }),
  "Mq-Delay-Level": z.string().optional().openapi({
    type: "integer",
    minimum: 0,
    description: "RocketMQ delay level 1-18",
  }),
  "Mq-Deliver-At": z.string().optional().openapi({
    type: "integer",
    minimum: 0,
    description: "Deliver at this epoch ms",
  }),
  "Mq-Message-Id": z.string().optional().openapi({
    description: "The producer's own message id (1-128 visible ASCII), as RocketMQ clients make " +
      "one; the broker makes one when absent",
  }),
  "Idempotency-Key": z.string().optional().openapi({
    description: "A repeat returns the first result and stores nothing",
  }),
  "Mq-Transaction": z.enum(["begin"]).optional().openapi({
    description: "begin: store a half message, delivered on commit (docs/transactions.md); " +
      "the answer carries transactionId and queueOffset -1",
  }),
  "Mq-Producer-Group": z.string().optional().openapi({
    description: "With Mq-Transaction: the producer group asked about an undecided transaction",
  }),
});

const produce = createRoute({
  method: "post",
  path: "/v1/topics/{topic}/messages",
  operationId: "produceMessage",
  tags: TAGS,
  summary: "Produce one message: the raw body is the message body",
  description: "Any content type; Content-Type is kept with the message. User properties are " +
    "headers Mq-Prop-<name>.",
  request: {
    params: topicParams,
    headers: produceHeaders,
    body: {
      required: true,
      content: { "*/*": { schema: z.string().openapi({ format: "binary" }) } },
    },
  },
  responses: {
    201: json("Stored", ProduceResultSchema),
    200: {
      ...json(
        "Idempotent replay: the first result; header Idempotent-Replayed: true",
        ProduceResultSchema,
      ),
      headers: z.object({ "Idempotent-Replayed": z.literal("true") }),
    },
    ...REFUSALS,
    408: REFUSED[408],
    409: REFUSED[409],
    413: REFUSED[413],
    422: REFUSED[422],
    504: REFUSED[504],
  },
});

const produceBatch = createRoute({
  method: "post",
  path: "/v1/topics/{topic}/messages/batch",
  operationId: "produceBatch",
  tags: TAGS,
  summary: "Produce many messages; each item succeeds or fails alone",
  request: {
    params: topicParams,
    body: {
      required: true,
      content: {
        "application/json": { schema: batchEnvelope.extend({ messages: z.array(batchItem) }) },
        [BATCH_FRAME_TYPE]: {
          schema: z.string().openapi({
            format: "binary",
            description: "The same messages as a binary batch frame (docs/cluster.md)",
          }),
        },
      },
    },
  },
  responses: {
    200: json("Per-item results; some may have failed", BatchResult),
    400: {
      description: "Every item failed (per-item results), or the body was refused (problem)",
      content: {
        "application/json": { schema: BatchResult },
        "application/problem+json": { schema: Problem },
      },
    },
    401: REFUSALS[401],
    403: REFUSALS[403],
    404: REFUSALS[404],
    408: REFUSED[408],
    413: REFUSED[413],
    500: REFUSALS[500],
    503: REFUSALS[503],
    504: REFUSED[504],
  },
});

export function produceRoutes(
  deps: RouteDeps<Pick<ProducerApi, "produce" | "produceBatch">>,
): Routes {
  const { api, allow, limits, deadlines } = deps;
  const app = newRoutes();

  serve(app, produceBatch, async (c) => {
    const topic = checkUserTopic(c.req.param("topic")!);
    allow(c, "publish", { topic });
    if (c.req.header("mq-transaction") !== undefined) {
      throw new BrokerError(
        "INVALID_HEADER",
        "Cannot begin a transaction with a batch: a transaction holds one message (POST /v1/topics/{topic}/messages)",
      );
    }
    const body = await readBody(c.req.raw, limits.batchBodyBytesMax, deadlines);
    // A binary frame (runtime/protocol/batch_frame.ts: the functions' link sends it), or JSON.
    const type = c.req.header("content-type");
    const frame = type === BATCH_FRAME_TYPE || type?.startsWith(`${BATCH_FRAME_TYPE};`) === true;
    const items = frame ? decodeBatchFrame(body, limits.batchItemsMax) : jsonItems(body);
    if (items.length === 0 || items.length > limits.batchItemsMax) {
      throw new BrokerError(
        "TOO_MANY_ITEMS",
        `Cannot take ${items.length} messages in one batch: 1-${limits.batchItemsMax} (batchItemsMax)`,
      );
    }
    const results: BatchItemResult[] = new Array(items.length);
    const good: ProduceMessage[] = [];
    const goodIndex: number[] = [];
    items.forEach((item, index) => {
      try {
        const m = frame
          ? messageFromFrameItem(item as FrameItem, limits)
          : messageFromItem(item, limits);
        if (m.body.length > limits.maxMessageSize) {
          throw new BrokerError(
            "MESSAGE_TOO_LARGE",
            `Cannot append message as body exceeds maxMessageSize: ${m.body.length} > ${limits.maxMessageSize} bytes`,
          );
        }
        good.push(m);
        goodIndex.push(index);
      } catch (err) {
        results[index] = itemError(index, err);
      }
    });
    if (good.length > 0) {
      const stored = await api.call((b) => b.produceBatch(topic, good));
      stored.forEach((r, i) => results[goodIndex[i]] = r.ok ? r : { ...r, index: goodIndex[i] });
    }
    const failed = results.filter((r) => !r.ok).length;
    return c.json(
      { results, succeeded: results.length - failed, failed },
      failed === results.length ? 400 : 200,
    );
  });

  // The hot path (produce_one.ts).
  serve(app, produce, produceOne(deps));

  return app;
}

/** A JSON batch's items, not yet checked one by one. */
function jsonItems(body: Uint8Array): unknown[] {
  const envelope = batchEnvelope.safeParse(parseJson(body));
  if (!envelope.success) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      "Cannot read batch: expected {messages: [...]} and nothing else",
    );
  }
  return envelope.data.messages;
}

function itemError(index: number, err: unknown): BatchItemResult {
  const e = err instanceof BrokerError ? err : new BrokerError("INTERNAL", "Internal error");
  return {
    ok: false,
    index,
    error: { type: e.type, status: e.status, detail: e.message, code: e.code },
  };
}
