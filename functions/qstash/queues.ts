// Queues: a queue is a topic of one queue and a "qstash" subscription on it, ordered when
// its parallelism is 1 (strict FIFO, a failing message blocks the ones behind it), else
// with that many deliveries in flight. Pause and resume are the subscription's.
import type { Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QSTASH_QUEUE_PREFIX } from "../../runtime/protocol/qstash.ts";
import type { SubscriptionView } from "../../runtime/protocol/types.ts";
import type { Env } from "../routes/route.ts";
import { type Plumbing, type QstashDeps, queueTopic } from "./plumbing.ts";

export function queueRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  const { api, allow } = deps;
  app.post("/queues", async (c) => {
    allow(c, "admin");
    const input = await c.req.json().catch(() => undefined) as Record<string, unknown>;
    const name = input?.queueName;
    const parallelism = input?.parallelism ?? 1;
    if (typeof name !== "string") {
      throw new BrokerError("INVALID_PARAMETER", "queueName is required");
    }
    if (!Number.isSafeInteger(parallelism) || (parallelism as number) < 1) {
      throw new BrokerError("INVALID_PARAMETER", "parallelism must be an integer of at least 1");
    }
    await plumbing.upsertQueue(name, parallelism as number);
    if (typeof input.paused === "boolean") {
      await api.call((b) => b.setSubscriptionPaused(queueTopic(name), input.paused as boolean));
    }
    return c.body(null, 200);
  });
  app.get("/queues", async (c) => {
    allow(c, "admin");
    const subs = await api.call((b) => b.listSubscriptions());
    return c.json(
      subs.filter((s) => s.dialect === "qstash" && s.group.startsWith(QSTASH_QUEUE_PREFIX))
        .map(queueView),
    );
  });
  app.get("/queues/:name", async (c) => {
    allow(c, "admin");
    return c.json(queueView(await subscription(deps, c.req.param("name"))));
  });
  app.delete("/queues/:name", async (c) => {
    allow(c, "admin");
    const topic = queueTopic(c.req.param("name"));
    await subscription(deps, c.req.param("name"));
    await api.call((b) => b.deleteSubscription(topic));
    await api.call((b) => b.deleteTopic(topic));
    plumbing.forget(topic);
    return c.body(null, 200);
  });
  for (const action of ["pause", "resume"] as const) {
    app.post(`/queues/:name/${action}`, async (c) => {
      allow(c, "admin");
      await subscription(deps, c.req.param("name"));
      const topic = queueTopic(c.req.param("name"));
      await api.call((b) => b.setSubscriptionPaused(topic, action === "pause"));
      return c.body(null, 200);
    });
  }
}

async function subscription(deps: QstashDeps, name: string): Promise<SubscriptionView> {
  const group = queueTopic(name);
  try {
    return await deps.api.call((b) => b.getSubscription(group));
  } catch (err) {
    if (err instanceof BrokerError && err.code === "SUBSCRIPTION_NOT_FOUND") {
      throw new BrokerError("QUEUE_NOT_FOUND", `No queue ${name}`);
    }
    throw err;
  }
}

function queueView(s: SubscriptionView) {
  return {
    name: s.group.slice(QSTASH_QUEUE_PREFIX.length),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    parallelism: s.maxConcurrency,
    lag: s.stats.lag,
    paused: s.status === "paused",
  };
}
