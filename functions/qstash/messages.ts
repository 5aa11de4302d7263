// Messages: get one, cancel one or many while they wait for their delay (our scheduled
// messages, in whichever QStash topic holds them).
import type { Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QSTASH_PROPERTY, QSTASH_URL_GROUP_PREFIX } from "../../runtime/protocol/qstash.ts";
import type { SubscriptionView, WireMessage } from "../../runtime/protocol/types.ts";
import type { Env } from "../routes/route.ts";
import type { Plumbing, QstashDeps } from "./plumbing.ts";

/** Where the timer wheel keeps messages until they are due (storage's TIMER_TOPIC). */
const TIMER_WHEEL_TOPIC = "rmq_sys_wheel_timer";

export function messageRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  const { api, allow } = deps;
  const qstashGroups = () => qstashGroupsOf(deps);

  app.get("/messages/:id", async (c) => {
    allow(c, "admin");
    const id = c.req.param("id");
    // Delivered (or due) messages are in their topic; waiting ones in the timer wheel's.
    const m = await api.call((b) =>
      b.getMessageById(id).catch((err) =>
        err instanceof BrokerError && err.code === "MESSAGE_NOT_FOUND"
          ? b.getMessageById(id, TIMER_WHEEL_TOPIC)
          : Promise.reject(err)
      )
    );
    return c.json(messageView(m, (await plumbing.settings()).retriesDefault));
  });
  /** Cancels a delayed message in whichever QStash topic holds it; 0 or 1. */
  const cancel = async (id: string): Promise<number> => {
    for (const topic of new Set((await qstashGroups()).map((s) => s.topic))) {
      const done = await api.call((b) => b.cancelScheduled(topic, id)).then(() => 1, () => 0);
      if (done) return 1;
    }
    return 0;
  };
  app.delete("/messages/:id", async (c) => {
    allow(c, "admin");
    const cancelled = await cancel(c.req.param("id"));
    if (!cancelled) {
      throw new BrokerError("MESSAGE_NOT_FOUND", `No delayed message ${c.req.param("id")}`);
    }
    return c.json({ cancelled });
  });
  app.delete("/messages", async (c) => {
    allow(c, "admin");
    const ids = c.req.queries("messageIds");
    if (!ids) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cancelling by filter is not supported: name messageIds",
      );
    }
    let cancelled = 0;
    for (const id of ids) cancelled += await cancel(id);
    return c.json({ cancelled });
  });
}

/** Every subscription in the "qstash" dialect (queues, URL-group endpoints, the publish
 * and callback topics). */
export async function qstashGroupsOf(deps: QstashDeps): Promise<SubscriptionView[]> {
  return (await deps.api.call((b) => b.listSubscriptions())).filter((s) => s.dialect === "qstash");
}

/** A stored message as QStash's `Message`. */
export function messageView(m: WireMessage, retriesDefault: number, fallbackUrl = "") {
  const p = m.properties;
  const header: Record<string, string[]> = {};
  const forwarded = p[QSTASH_PROPERTY.headers];
  if (forwarded) {
    for (const [k, v] of Object.entries(JSON.parse(forwarded))) header[k] = [String(v)];
  }
  return {
    messageId: m.messageId,
    url: p[QSTASH_PROPERTY.url] ?? fallbackUrl,
    ...(m.topic.startsWith(QSTASH_URL_GROUP_PREFIX)
      ? { topicName: m.topic.slice(QSTASH_URL_GROUP_PREFIX.length) }
      : {}),
    ...(p[QSTASH_PROPERTY.queueName] ? { queueName: p[QSTASH_PROPERTY.queueName] } : {}),
    method: p[QSTASH_PROPERTY.method] ?? "POST",
    header,
    ...(m.bodyEncoding === "utf8" ? { body: m.body } : { bodyBase64: m.body }),
    maxRetries: Number(p[QSTASH_PROPERTY.retries] ?? retriesDefault),
    createdAt: m.bornTimestamp,
    ...(p[QSTASH_PROPERTY.callback] ? { callback: p[QSTASH_PROPERTY.callback] } : {}),
    ...(p[QSTASH_PROPERTY.failureCallback]
      ? { failureCallback: p[QSTASH_PROPERTY.failureCallback] }
      : {}),
    flowControlKey: "",
  };
}
