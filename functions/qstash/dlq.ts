// The DLQ: every "qstash" subscription's dead letters (QstashApi keeps deleted and
// retried ones out of the listing). A DLQ id is `<group>:<messageId>`: the endpoint's
// group and the message.
import type { Context, Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { Env } from "../routes/route.ts";
import { messageView, qstashGroupsOf } from "./messages.ts";
import type { Plumbing, QstashDeps } from "./plumbing.ts";

export function dlqRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  const { api, allow } = deps;
  const qstashGroups = () => qstashGroupsOf(deps);
  /** The letters named by `dlqIds` (all when absent), grouped by their group. */
  const named = async (c: Context<Env>): Promise<Map<string, string[]>> => {
    onlyParams(c, ["dlqIds", "count", "cursor"]);
    const ids = c.req.queries("dlqIds");
    const byGroup = new Map<string, string[]>();
    if (ids) {
      for (const [group, id] of ids.map(splitDlqId)) {
        byGroup.set(group, [...byGroup.get(group) ?? [], id]);
      }
      return byGroup;
    }
    for (const s of await qstashGroups()) {
      const letters = await deps.qstash.listDeadLetters(s.group, DLQ_PAGE_MAX);
      if (letters.length > 0) byGroup.set(s.group, letters.map((m) => m.messageId));
    }
    return byGroup;
  };

  app.get("/dlq", async (c) => {
    allow(c, "admin");
    onlyParams(c, ["dlqIds", "count", "cursor"]);
    const wanted = c.req.queries("dlqIds");
    const count = Math.min(Number(c.req.query("count") ?? DLQ_PAGE_MAX) || 1, DLQ_PAGE_MAX);
    const retries = (await plumbing.settings()).retriesDefault;
    const messages = [];
    for (const s of await qstashGroups()) {
      for (const m of await deps.qstash.listDeadLetters(s.group, DLQ_PAGE_MAX)) {
        const dlqId = `${s.group}:${m.messageId}`;
        if (wanted && !wanted.includes(dlqId)) continue;
        messages.push({ ...messageView(m, retries, s.url), dlqId });
      }
    }
    return c.json({ messages: messages.slice(0, count) });
  });
  app.get("/dlq/:id", async (c) => {
    allow(c, "admin");
    const [group, id] = splitDlqId(c.req.param("id"));
    const letters = await deps.qstash.listDeadLetters(group, Infinity);
    const m = letters.find((x) => x.messageId === id);
    if (!m) throw new BrokerError("MESSAGE_NOT_FOUND", `No dead letter ${c.req.param("id")}`);
    const sub = await api.call((b) => b.getSubscription(group));
    const retries = (await plumbing.settings()).retriesDefault;
    return c.json({ ...messageView(m, retries, sub.url), dlqId: c.req.param("id") });
  });
  const retry = async (byGroup: Map<string, string[]>) => {
    const responses = [];
    for (const [group, ids] of byGroup) {
      for (const messageId of await deps.qstash.retryDeadLetters(group, ids)) {
        responses.push({ messageId });
      }
    }
    return responses;
  };
  app.post("/dlq/retry", async (c) => {
    allow(c, "admin");
    return c.json({ responses: await retry(await named(c)) });
  });
  app.post("/dlq/retry/:id", async (c) => {
    allow(c, "admin");
    const [group, id] = splitDlqId(c.req.param("id"));
    return c.json({ responses: await retry(new Map([[group, [id]]])) });
  });
  app.delete("/dlq", async (c) => {
    allow(c, "admin");
    let deleted = 0;
    for (const [group, ids] of await named(c)) {
      deleted += await deps.qstash.deleteDeadLetters(group, ids);
    }
    return c.json({ deleted });
  });
  app.delete("/dlq/:id", async (c) => {
    allow(c, "admin");
    const [group, id] = splitDlqId(c.req.param("id"));
    if (await deps.qstash.deleteDeadLetters(group, [id]) === 0) {
      throw new BrokerError("MESSAGE_NOT_FOUND", `No dead letter ${c.req.param("id")}`);
    }
    return c.json({ deleted: 1 });
  });
}

/** QStash's page of dead letters (its DLQ list and delete take at most 100). */
const DLQ_PAGE_MAX = 100;

/** Query parameters other than `allowed` are filters we do not carry out: refused. */
export function onlyParams(c: Context<Env>, allowed: string[]) {
  for (const name of Object.keys(c.req.queries())) {
    if (!allowed.includes(name)) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Filtering by ${name} is not supported by this broker's QStash API (docs/qstash.md)`,
      );
    }
  }
}

function splitDlqId(id: string): [string, string] {
  const at = id.lastIndexOf(":");
  if (at < 1) throw new BrokerError("INVALID_PARAMETER", `${id} is not a DLQ id`);
  return [id.slice(0, at), id.slice(at + 1)];
}
