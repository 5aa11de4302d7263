// Messages (get, cancel one or many), the DLQ (list, retry, delete) and events (our
// delivery log), over every subscription in the "qstash" dialect. A DLQ id is
// `<group>:<messageId>`: the endpoint's group and the message.
import type { Context, Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QSTASH_PROPERTY, QSTASH_URL_GROUP_PREFIX } from "../../runtime/protocol/qstash.ts";
import type { WireMessage } from "../../runtime/protocol/types.ts";
import type { Env } from "../routes/route.ts";
import type { Plumbing, QstashDeps } from "./plumbing.ts";

export function messageRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  const { api, allow } = deps;
  const qstashGroups = async () =>
    (await api.call((b) => b.listSubscriptions())).filter((s) => s.dialect === "qstash");

  app.get("/messages/:id", async (c) => {
    allow(c, "admin");
    const m = await api.call((b) => b.getMessageById(c.req.param("id")));
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

  app.get("/dlq", async (c) => {
    allow(c, "admin");
    const wanted = c.req.queries("dlqIds");
    const retries = (await plumbing.settings()).retriesDefault;
    const messages = [];
    for (const s of await qstashGroups()) {
      const page = await api.call((b) => b.listDlq(s.group, { max: 100 }));
      for (const m of page.messages) {
        const dlqId = `${s.group}:${m.messageId}`;
        if (wanted && !wanted.includes(dlqId)) continue;
        messages.push({ ...messageView(m, retries, s.url), dlqId });
      }
    }
    return c.json({ messages });
  });
  app.post("/dlq/retry", async (c) => {
    allow(c, "admin");
    const ids = dlqIds(c);
    const responses = [];
    for (const [group, messageId] of ids) {
      const { redriven } = await api.call((b) => b.redriveDlq(group, [messageId]));
      if (redriven > 0) responses.push({ messageId });
    }
    return c.json({ responses });
  });
  app.delete("/dlq", async (c) => {
    allow(c, "admin");
    if (c.req.queries("dlqIds")) throw oneByOne();
    let deleted = 0;
    for (const s of await qstashGroups()) {
      deleted += (await api.call((b) => b.purgeDlq(s.group))).purged;
    }
    return c.json({ deleted });
  });
  app.delete("/dlq/:id", () => {
    throw oneByOne();
  });

  app.get("/events", async (c) => {
    allow(c, "admin");
    const wanted = c.req.queries("messageIds");
    const count = Math.min(Number(c.req.query("count") ?? 100) || 100, 1000);
    const events = [];
    for (const s of await qstashGroups()) {
      for (const a of await api.call((b) => b.listDeliveries(s.group, { limit: 1000 }))) {
        if (wanted && !wanted.includes(a.messageId)) continue;
        events.push({
          time: a.at,
          state: STATES[a.outcome],
          messageId: a.messageId,
          url: s.url,
          header: {},
          ...(a.error ? { error: a.error } : {}),
          responseStatus: a.status,
        });
      }
    }
    events.sort((a, b) => b.time - a.time);
    return c.json({ events: events.slice(0, count) });
  });
}

const STATES = {
  "delivered": "DELIVERED",
  "retry": "RETRY",
  "throttled": "RETRY",
  "dead-lettered": "FAILED",
  "disabled": "ERROR",
} as const;

function oneByOne(): BrokerError {
  return new BrokerError(
    "INVALID_PARAMETER",
    "Deleting single dead letters is not supported; DELETE /v2/dlq deletes them all",
  );
}

function dlqIds(c: Context<Env>): [string, string][] {
  const ids = c.req.queries("dlqIds");
  if (!ids) throw new BrokerError("INVALID_PARAMETER", "Name the dead letters with dlqIds");
  return ids.map((id) => {
    const at = id.lastIndexOf(":");
    if (at < 1) throw new BrokerError("INVALID_PARAMETER", `${id} is not a DLQ id`);
    return [id.slice(0, at), id.slice(at + 1)];
  });
}

/** A stored message as QStash's `Message`. */
function messageView(m: WireMessage, retriesDefault: number, fallbackUrl = "") {
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
    method: "POST",
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
