// The public HTTP API (DESIGN.md, "Public HTTP API"): one Hono app with no state of its
// own. It authenticates, validates and limits, then calls a BrokerClient: the broker in
// the same process (embedded), or one found in the KV route table (split, Deploy).
import type { BrokerClient, BrokerResolver } from "../runtime/protocol/core_api.ts";
import { Hono } from "hono";
import type { Context } from "hono";
import { BrokerError } from "../runtime/protocol/errors.ts";
import {
  checkGroup,
  checkReadableTopic,
  checkUserTopic,
  parseNonNegativeInt,
} from "../runtime/protocol/names.ts";
import type {
  ApiKeyConfig,
  BatchItemResult,
  GroupSettings,
  HeartbeatRequest,
  ProduceMessage,
  ProduceResult,
  SubscriptionInput,
} from "../runtime/protocol/types.ts";
import type { BrokerConfig } from "../runtime/config.ts";
import { Authenticator, type Principal, type Right } from "./auth.ts";
import { BodyDeadlines, readBody } from "./body.ts";
import {
  batchEnvelope,
  messageFromHeaders,
  messageFromItem,
  readProduceHeaders,
} from "./produce_input.ts";
import { openApiDocument } from "./openapi.ts";

export interface FunctionsLimits {
  /** Largest message body (the broker's maxMessageSize), bytes. */
  maxMessageSize: number;
  batchBodyBytesMax: number;
  batchItemsMax: number;
  bodyReadTimeoutMs: number;
  pullWaitMsMax: number;
  pullMsgNumsMax: number;
  idempotencyKeyBytesMax: number;
  userPropertiesMax: number;
}

/** The limits of a broker's own settings (the embedded app enforces what the broker does). */
export function functionsLimits(config: BrokerConfig): FunctionsLimits {
  return {
    maxMessageSize: config.store.maxMessageSize,
    batchBodyBytesMax: config.batchBodyBytesMax,
    batchItemsMax: config.batchItemsMax,
    bodyReadTimeoutMs: config.bodyReadTimeoutMs,
    pullWaitMsMax: config.pullWaitMsMax,
    pullMsgNumsMax: config.pullMsgNumsMax,
    idempotencyKeyBytesMax: config.idempotencyKeyBytesMax,
    userPropertiesMax: config.userPropertiesMax,
  };
}

export interface FunctionsOptions {
  broker: BrokerResolver;
  apiKeys: ApiKeyConfig[];
  limits: FunctionsLimits;
  log: (
    level: "debug" | "info" | "warn" | "error",
    msg: string,
    fields?: Record<string, unknown>,
  ) => void;
  /** Prometheus text, when the broker is in this process. */
  metrics?: () => string;
}

type Env = { Variables: { principal: Principal } };

export async function createApp(options: FunctionsOptions): Promise<Hono<Env>> {
  const auth = await Authenticator.create(options.apiKeys);
  if (auth.open) {
    options.log("warn", "no API keys configured: the HTTP API is open to anyone who can reach it");
  }
  const { limits } = options;
  const app = new Hono<Env>();
  // performance.now: a monotonic clock, as the per-request setTimeout it replaces was.
  const deadlines = new BodyDeadlines(limits.bodyReadTimeoutMs, () => performance.now());

  // A failure that suggests the route is stale: the resolver drops it.
  const failed = (broker: BrokerClient, err: unknown) => {
    if (
      !(err instanceof BrokerError) || err.code === "BROKER_UNAVAILABLE" ||
      err.code === "NOT_LEADER"
    ) {
      options.broker.failed(broker, err);
    }
  };
  const call = async <T>(f: (b: BrokerClient) => Promise<T>): Promise<T> => {
    const broker = await options.broker.get();
    try {
      return await f(broker);
    } catch (err) {
      failed(broker, err);
      throw err;
    }
  };
  const allow = (
    c: Context<Env>,
    right: Right,
    resources: { topic?: string; group?: string } = {},
  ) => auth.authorize(c.get("principal"), right, resources);

  app.onError((err, c) => problem(c, err, options.log));
  app.notFound((c) =>
    problem(
      c,
      new BrokerError("ROUTE_NOT_FOUND", `No route ${c.req.method} ${new URL(c.req.url).pathname}`),
      options.log,
    )
  );

  app.get("/healthz", async (c) => c.json(await call((b) => b.health())));
  app.get("/openapi.json", (c) => c.json(openApiDocument()));
  app.get(
    "/metrics",
    (c) => c.text(options.metrics?.() ?? "", 200, { "content-type": "text/plain; version=0.0.4" }),
  );

  // An open API authorizes everything without looking at a principal, so it skips the
  // middleware: a route with no middleware is called directly by Hono, without compose's
  // closures and promise per request.
  if (!auth.open) {
    app.use("/v1/*", async (c, next) => {
      c.set("principal", await auth.authenticate(c.req.header("authorization")));
      await next();
    });
  }

  app.post("/v1/topics/:topic/messages/batch", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "publish", { topic });
    const body = await readBody(c.req.raw, limits.batchBodyBytesMax, deadlines);
    const envelope = batchEnvelope.safeParse(parseJson(body));
    if (!envelope.success) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot read batch: expected {messages: [...]} and nothing else",
      );
    }
    const items = envelope.data.messages;
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
        const m = messageFromItem(item, limits);
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
      const stored = await call((b) => b.produceBatch(topic, good));
      stored.forEach((r, i) => results[goodIndex[i]] = r.ok ? r : { ...r, index: goodIndex[i] });
    }
    const failed = results.filter((r) => !r.ok).length;
    return c.json(
      { results, succeeded: results.length - failed, failed },
      failed === results.length ? 400 : 200,
    );
  });

  app.post("/v1/topics/:topic/messages", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "publish", { topic });
    const headers = readProduceHeaders(c.req.raw.headers);
    const body = await readBody(c.req.raw, limits.maxMessageSize, deadlines, headers.contentLength);
    const message = messageFromHeaders(headers, body, limits);
    // call() inlined: the hottest route skips its async frame and closure.
    const broker = await options.broker.get();
    let result: ProduceResult;
    try {
      result = await broker.produce(topic, message);
    } catch (err) {
      failed(broker, err);
      throw err;
    }
    if (result.idempotentReplay) return c.json(result, 200, { "idempotent-replayed": "true" });
    return c.json(result, 201);
  });

  app.get("/v1/topics/:topic/queues/:queueId/messages", async (c) => {
    const topic = checkReadableTopic(c.req.param("topic"));
    const queueId = parseNonNegativeInt("queueId", c.req.param("queueId"), 65535)!;
    const group = c.req.query("group");
    if (group !== undefined) checkGroup(group);
    allow(c, "subscribe", { topic, group });
    const offset = parseNonNegativeInt("offset", c.req.query("offset"));
    if (offset === undefined) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot pull without offset (use GET /v1/groups/{group}/offsets/{topic} to find one)",
      );
    }
    const max = parseNonNegativeInt("max", c.req.query("max"), limits.pullMsgNumsMax);
    if (max === 0) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot pull max=0: use 1-${limits.pullMsgNumsMax}`,
      );
    }
    const waitMs = parseNonNegativeInt("waitMs", c.req.query("waitMs"), limits.pullWaitMsMax);
    const tags = c.req.query("tags");
    const result = await call((b) =>
      b.pull(topic, queueId, { offset, max, waitMs, tags, group }, () => c.req.raw.signal)
    );
    return c.json(result);
  });

  app.get("/v1/topics/:topic/messages", async (c) => {
    const topic = checkReadableTopic(c.req.param("topic"));
    allow(c, "subscribe", { topic });
    const key = c.req.query("key");
    const beginTimestamp = parseNonNegativeInt("begin", c.req.query("begin"));
    const endTimestamp = parseNonNegativeInt("end", c.req.query("end"));
    const maxNum = parseNonNegativeInt("max", c.req.query("max"), 64);
    if (key === undefined && beginTimestamp === undefined) {
      throw new BrokerError("INVALID_PARAMETER", "Cannot search without key or begin (epoch ms)");
    }
    const messages = await call((b) =>
      b.findMessages(topic, { key, beginTimestamp, endTimestamp, maxNum })
    );
    return c.json({ messages });
  });

  app.get("/v1/messages/:messageId", async (c) => {
    const topic = c.req.query("topic");
    if (topic !== undefined) checkReadableTopic(topic);
    const message = await call((b) => b.getMessageById(c.req.param("messageId"), topic));
    allow(c, "subscribe", { topic: message.topic });
    return c.json(message);
  });

  app.get("/v1/topics", async (c) => {
    allow(c, "any");
    return c.json({ topics: await call((b) => b.listTopics()) });
  });
  app.get("/v1/topics/:topic", async (c) => {
    allow(c, "any");
    return c.json(await call((b) => b.getTopic(checkReadableTopic(c.req.param("topic")))));
  });
  app.put("/v1/topics/:topic", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "admin", { topic });
    const body = await jsonBody(c, deadlines) as Record<string, unknown>;
    const allowed = new Set(["readQueueNums", "writeQueueNums", "perm", "order"]);
    for (const [k, v] of Object.entries(body)) {
      if (!allowed.has(k)) throw new BrokerError("INVALID_PARAMETER", `Unknown topic setting ${k}`);
      if (k === "order" ? typeof v !== "boolean" : !Number.isInteger(v)) {
        throw new BrokerError("INVALID_PARAMETER", `Topic setting ${k} has the wrong type`);
      }
    }
    return c.json(await call((b) => b.upsertTopic(topic, body)));
  });
  app.delete("/v1/topics/:topic", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "admin", { topic });
    await call((b) => b.deleteTopic(topic));
    return c.body(null, 204);
  });

  app.put("/v1/groups/:group", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    const body = c.req.header("content-length") === "0" || !c.req.raw.body
      ? {}
      : await jsonBody(c, deadlines) as Record<string, unknown>;
    const allowed = new Set([
      "messageModel",
      "consumeFromWhere",
      "consumeTimestampMs",
      "retryMaxTimes",
      "retryBackoffMs",
      "orderly",
    ]);
    for (const k of Object.keys(body)) {
      if (!allowed.has(k)) {
        throw new BrokerError("INVALID_PARAMETER", `Unknown group setting ${k}`);
      }
    }
    return c.json(await call((b) => b.upsertGroup(group, body as GroupSettings)));
  });
  app.post("/v1/groups/:group/heartbeat", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    const body = await jsonBody(c, deadlines) as Record<string, unknown>;
    for (const k of Object.keys(body)) {
      if (!["clientId", "subscriptions", "strategy", "room", "configQueues"].includes(k)) {
        throw new BrokerError("INVALID_PARAMETER", `Unknown heartbeat field ${k}`);
      }
    }
    if (
      !Array.isArray(body.subscriptions) ||
      !body.subscriptions.every((s) => s && typeof s.topic === "string")
    ) {
      throw new BrokerError("INVALID_PARAMETER", "subscriptions must be a list of {topic, tags?}");
    }
    for (const s of body.subscriptions as { topic: string }[]) {
      allow(c, "subscribe", { topic: s.topic, group });
    }
    return c.json(await call((b) => b.heartbeat(group, body as unknown as HeartbeatRequest)));
  });
  app.delete("/v1/groups/:group/members/:clientId", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    return c.json(await call((b) => b.unregister(group, c.req.param("clientId"))));
  });
  app.get("/v1/groups/:group/assignment", async (c) => {
    const group = checkGroup(c.req.param("group"));
    const topic = checkReadableTopic(c.req.query("topic") ?? "");
    const clientId = c.req.query("clientId");
    if (!clientId) {
      throw new BrokerError("INVALID_PARAMETER", "Cannot compute an assignment without clientId");
    }
    allow(c, "subscribe", { topic, group });
    return c.json(await call((b) => b.assignment(group, clientId, topic)));
  });
  for (const action of ["lock", "unlock"] as const) {
    app.post(`/v1/groups/:group/${action}`, async (c) => {
      const group = checkGroup(c.req.param("group"));
      const body = await jsonBody(c, deadlines) as {
        clientId?: unknown;
        topic?: unknown;
        queueIds?: unknown;
      };
      if (
        typeof body.clientId !== "string" || typeof body.topic !== "string" ||
        !Array.isArray(body.queueIds) || !body.queueIds.every(Number.isInteger)
      ) {
        throw new BrokerError("INVALID_PARAMETER", "Send {clientId, topic, queueIds: [int]}");
      }
      const topic = checkReadableTopic(body.topic);
      allow(c, "subscribe", { topic, group });
      const queueIds = await call((b) =>
        b.lockQueues(
          group,
          body.clientId as string,
          topic,
          body.queueIds as number[],
          action === "unlock",
        )
      );
      return c.json({ queueIds });
    });
  }
  app.get("/v1/groups/:group/dlq", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    const offset = parseNonNegativeInt("offset", c.req.query("offset"));
    const max = parseNonNegativeInt("max", c.req.query("max"), limits.pullMsgNumsMax);
    return c.json(await call((b) => b.listDlq(group, { offset, max })));
  });
  app.post("/v1/groups/:group/dlq/redrive", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "admin", { group });
    const body = await jsonBody(c, deadlines) as { messageIds?: unknown };
    const ids = body.messageIds;
    if (
      ids !== undefined &&
      (!Array.isArray(ids) || ids.length > 1000 || !ids.every((x) => typeof x === "string"))
    ) {
      throw new BrokerError("INVALID_PARAMETER", "messageIds must be a list of at most 1000 ids");
    }
    return c.json(await call((b) => b.redriveDlq(group, ids as string[] | undefined)));
  });
  app.delete("/v1/groups/:group/dlq", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "admin", { group });
    return c.json(await call((b) => b.purgeDlq(group)));
  });
  app.get("/v1/groups/:group", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    return c.json(await call((b) => b.getGroup(group)));
  });
  app.post("/v1/groups/:group/receive", async (c) => {
    const group = checkGroup(c.req.param("group"));
    const body = await jsonBody(c, deadlines) as Record<string, unknown>;
    for (const k of Object.keys(body)) {
      if (!["topic", "max", "invisibleMs", "waitMs", "clientId"].includes(k)) {
        throw new BrokerError("INVALID_PARAMETER", `Unknown receive field ${k}`);
      }
    }
    if (typeof body.topic !== "string") {
      throw new BrokerError("INVALID_PARAMETER", "Cannot receive without topic");
    }
    const topic = checkReadableTopic(body.topic);
    allow(c, "subscribe", { topic, group });
    for (const k of ["max", "invisibleMs", "waitMs"]) {
      if (body[k] !== undefined && (!Number.isSafeInteger(body[k]) || (body[k] as number) < 0)) {
        throw new BrokerError("INVALID_PARAMETER", `${k} must be a non-negative integer`);
      }
    }
    if ((body.waitMs as number | undefined ?? 0) > limits.pullWaitMsMax) {
      throw new BrokerError("INVALID_PARAMETER", `waitMs must be at most ${limits.pullWaitMsMax}`);
    }
    const messages = await call((b) =>
      b.receive(group, {
        topic,
        clientId: body.clientId as string | undefined,
        max: body.max as number | undefined,
        invisibleMs: body.invisibleMs as number | undefined,
        waitMs: body.waitMs as number | undefined,
      }, () => c.req.raw.signal)
    );
    return c.json({ messages });
  });
  app.post("/v1/groups/:group/ack/batch", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    const body = await jsonBody(c, deadlines) as { receiptHandles?: unknown };
    const handles = body.receiptHandles;
    if (
      !Array.isArray(handles) || handles.length === 0 || handles.length > ACK_BATCH_MAX ||
      !handles.every((h) => typeof h === "string")
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Send {"receiptHandles": [...]}: 1-${ACK_BATCH_MAX} strings`,
      );
    }
    return c.json({ results: await call((b) => b.ackBatch(group, handles as string[])) });
  });
  for (const action of ["ack", "nack", "visibility"] as const) {
    app.post(`/v1/groups/:group/${action}`, async (c) => {
      const group = checkGroup(c.req.param("group"));
      allow(c, "subscribe", { group });
      const body = await jsonBody(c, deadlines) as Record<string, unknown>;
      if (typeof body.receiptHandle !== "string") {
        throw new BrokerError("INVALID_PARAMETER", "Cannot settle without receiptHandle");
      }
      const handle = body.receiptHandle;
      if (action === "ack") {
        await call((b) => b.ack(group, handle));
        return c.json({ receiptHandle: handle, status: "ACKED" });
      }
      const ms = action === "nack" ? body.delayMs ?? 0 : body.invisibleMs;
      if (!Number.isSafeInteger(ms) || (ms as number) < 0) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          `${action === "nack" ? "delayMs" : "invisibleMs"} must be a non-negative integer`,
        );
      }
      if (action === "nack") {
        await call((b) => b.nack(group, handle, ms as number));
        return c.json({ receiptHandle: handle, status: "NACKED" });
      }
      return c.json({
        receiptHandle: handle,
        ...(await call((b) => b.changeInvisibleTime(group, handle, ms as number))),
      });
    });
  }
  app.get("/v1/groups/:group/offsets/:topic", async (c) => {
    const [group, topic] = [
      checkGroup(c.req.param("group")),
      checkReadableTopic(c.req.param("topic")),
    ];
    allow(c, "subscribe", { topic, group });
    return c.json(await call((b) => b.getOffsets(group, topic)));
  });
  app.put("/v1/groups/:group/offsets/:topic", async (c) => {
    const [group, topic] = [
      checkGroup(c.req.param("group")),
      checkReadableTopic(c.req.param("topic")),
    ];
    allow(c, "subscribe", { topic, group });
    const body = await jsonBody(c, deadlines) as { timestamp?: unknown };
    if (
      !Number.isSafeInteger(body.timestamp) || (body.timestamp as number) < 0 ||
      Object.keys(body).length !== 1
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        'Cannot reset offsets: send {"timestamp": <epoch ms>}',
      );
    }
    return c.json(await call((b) => b.resetOffsetsByTime(group, topic, body.timestamp as number)));
  });
  app.get("/v1/groups/:group/offsets/:topic/:queueId", async (c) => {
    const [group, topic] = [
      checkGroup(c.req.param("group")),
      checkReadableTopic(c.req.param("topic")),
    ];
    allow(c, "subscribe", { topic, group });
    const queueId = parseNonNegativeInt("queueId", c.req.param("queueId"), 65535)!;
    return c.json(await call((b) => b.getOffset(group, topic, queueId)));
  });
  app.put("/v1/groups/:group/offsets/:topic/:queueId", async (c) => {
    const [group, topic] = [
      checkGroup(c.req.param("group")),
      checkReadableTopic(c.req.param("topic")),
    ];
    allow(c, "subscribe", { topic, group });
    const queueId = parseNonNegativeInt("queueId", c.req.param("queueId"), 65535)!;
    const body = await jsonBody(c, deadlines) as { offset?: unknown };
    if (
      !Number.isSafeInteger(body.offset) || (body.offset as number) < 0 ||
      Object.keys(body).length !== 1
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        'Cannot commit offset: send {"offset": <non-negative integer>}',
      );
    }
    return c.json(await call((b) => b.commitOffset(group, topic, queueId, body.offset as number)));
  });

  app.delete("/v1/topics/:topic/scheduled/:messageId", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "publish", { topic });
    return c.json(await call((b) => b.cancelScheduled(topic, c.req.param("messageId"))));
  });
  app.put("/v1/topics/:topic/scheduled/:messageId", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "publish", { topic });
    const body = await jsonBody(c, deadlines) as { deliverAt?: unknown };
    if (!Number.isSafeInteger(body.deliverAt) || Object.keys(body).length !== 1) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        'Cannot reschedule: send {"deliverAt": <epoch ms>}',
      );
    }
    return c.json(
      await call((b) =>
        b.rescheduleScheduled(topic, c.req.param("messageId"), body.deliverAt as number)
      ),
    );
  });
  app.delete("/v1/topics/:topic/scheduled", async (c) => {
    const topic = checkUserTopic(c.req.param("topic"));
    allow(c, "publish", { topic });
    const key = c.req.query("key");
    if (!key) throw new BrokerError("INVALID_PARAMETER", "Cannot cancel by key without ?key=");
    return c.json({ cancelled: await call((b) => b.cancelScheduledByKey(topic, key)) });
  });

  app.post("/v1/schedules", async (c) => {
    const body = await jsonBody(c, deadlines) as Record<string, unknown>;
    const allowed = new Set(["topic", "cron", "timeZone", "missedTicks", "paused", "message"]);
    for (const k of Object.keys(body)) {
      if (!allowed.has(k)) {
        throw new BrokerError("INVALID_PARAMETER", `Unknown schedule field ${k}`);
      }
    }
    if (typeof body.topic !== "string" || typeof body.cron !== "string") {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot create a schedule without topic and cron (strings)",
      );
    }
    if (body.timeZone !== undefined && typeof body.timeZone !== "string") {
      throw new BrokerError("INVALID_PARAMETER", "timeZone must be a string");
    }
    if (body.paused !== undefined && typeof body.paused !== "boolean") {
      throw new BrokerError("INVALID_PARAMETER", "paused must be a boolean");
    }
    const topic = checkUserTopic(body.topic);
    allow(c, "publish", { topic });
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
    const view = await call((b) =>
      b.createSchedule({
        topic,
        cron: body.cron as string,
        timeZone: body.timeZone as string | undefined,
        missedTicks: body.missedTicks as "skip" | "fire_once" | undefined,
        paused: body.paused as boolean | undefined,
        message,
      })
    );
    return c.json(view, 201);
  });
  app.get("/v1/schedules", async (c) => {
    allow(c, "any");
    return c.json({ schedules: await call((b) => b.listSchedules()) });
  });
  app.get("/v1/schedules/:id", async (c) => {
    allow(c, "any");
    return c.json(await call((b) => b.getSchedule(c.req.param("id"))));
  });
  for (const [action, paused] of [["pause", true], ["resume", false]] as const) {
    app.post(`/v1/schedules/:id/${action}`, async (c) => {
      const id = c.req.param("id");
      allow(c, "publish", { topic: (await call((b) => b.getSchedule(id))).topic });
      return c.json(await call((b) => b.setSchedulePaused(id, paused)));
    });
  }
  app.delete("/v1/schedules/:id", async (c) => {
    const id = c.req.param("id");
    allow(c, "publish", { topic: (await call((b) => b.getSchedule(id))).topic });
    await call((b) => b.deleteSchedule(id));
    return c.body(null, 204);
  });

  // Webhook subscriptions: registering an egress URL is an admin right; reading the
  // delivery log needs subscribe on the group.
  app.put("/v1/subscriptions/:group", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "admin");
    const body = await jsonBody(c, deadlines) as SubscriptionInput;
    return c.json(await call((b) => b.upsertSubscription(group, body)));
  });
  app.get("/v1/subscriptions", async (c) => {
    allow(c, "admin");
    return c.json({ subscriptions: await call((b) => b.listSubscriptions()) });
  });
  app.get("/v1/subscriptions/:group", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    return c.json(await call((b) => b.getSubscription(group)));
  });
  app.delete("/v1/subscriptions/:group", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "admin");
    await call((b) => b.deleteSubscription(group));
    return c.body(null, 204);
  });
  for (const [action, paused] of [["pause", true], ["resume", false]] as const) {
    app.post(`/v1/subscriptions/:group/${action}`, async (c) => {
      const group = checkGroup(c.req.param("group"));
      allow(c, "admin");
      return c.json(await call((b) => b.setSubscriptionPaused(group, paused)));
    });
  }
  app.post("/v1/subscriptions/:group/replay", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "admin");
    const body = await jsonBody(c, deadlines) as Record<string, unknown>;
    if (!Number.isSafeInteger(body.timestamp) || Object.keys(body).length !== 1) {
      throw new BrokerError("INVALID_PARAMETER", 'Cannot replay: send {"timestamp": <epoch ms>}');
    }
    return c.json(await call((b) => b.replaySubscription(group, body.timestamp as number)));
  });
  app.get("/v1/subscriptions/:group/deliveries", async (c) => {
    const group = checkGroup(c.req.param("group"));
    allow(c, "subscribe", { group });
    const limit = c.req.query("limit");
    const messageId = c.req.query("messageId");
    return c.json({
      deliveries: await call((b) =>
        b.listDeliveries(group, {
          ...(limit !== undefined ? { limit: parseNonNegativeInt("limit", limit) } : {}),
          ...(messageId !== undefined ? { messageId } : {}),
        })
      ),
    });
  });

  return app;
}

/** Receipt handles per batch ack (RocketMQ's BATCH_ACK). */
const ACK_BATCH_MAX = 1000;

/** Small admin bodies: 64 KiB is plenty and bounds the JSON parser. */
const ADMIN_BODY_BYTES_MAX = 64 * 1024;

async function jsonBody(c: Context<Env>, deadlines: BodyDeadlines): Promise<unknown> {
  const value = parseJson(await readBody(c.req.raw, ADMIN_BODY_BYTES_MAX, deadlines));
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new BrokerError("INVALID_JSON", "Cannot read body: expected a JSON object");
  }
  return value;
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new BrokerError("INVALID_JSON", "Cannot parse the request body as UTF-8 JSON");
  }
}

function itemError(index: number, err: unknown): BatchItemResult {
  const e = err instanceof BrokerError ? err : new BrokerError("INTERNAL", "Internal error");
  return {
    ok: false,
    index,
    error: { type: e.type, status: e.status, detail: e.message, code: e.code },
  };
}

function problem(c: Context, err: unknown, log: FunctionsOptions["log"]) {
  let e: BrokerError;
  if (err instanceof BrokerError) e = err;
  else {
    log("error", "unhandled error in a request", {
      err: String(err),
      stack: (err as Error)?.stack,
      path: c.req.path,
    });
    e = new BrokerError("INTERNAL", "Internal error; the broker log has the details");
  }
  return c.body(JSON.stringify(e.toProblem()), e.status as 400, {
    "content-type": "application/problem+json",
  });
}
