// URL groups ("topics" on QStash's wire): a group is our topic `qstash-g-<name>`, each
// endpoint a "qstash" webhook subscription on it, so a publish fans out to all of them.
// An endpoint's group is `<topic>--n-<name>` when named, else `<topic>--u-<hash of url>`.
import { createHash } from "node:crypto";
import type { Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  QSTASH_ENDPOINT_SEPARATOR,
  QSTASH_URL_GROUP_PREFIX,
} from "../../runtime/protocol/qstash.ts";
import type { SubscriptionView } from "../../runtime/protocol/types.ts";
import type { Env } from "../routes/route.ts";
import { checkQstashName, groupTopic, type Plumbing, type QstashDeps } from "./plumbing.ts";

interface Endpoint {
  name?: string;
  url?: string;
}

export function urlGroupRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  const { api, allow } = deps;
  const endpointsOf = (body: unknown): Endpoint[] => {
    const list = (body as { endpoints?: unknown })?.endpoints;
    if (!Array.isArray(list) || list.length === 0) {
      throw new BrokerError("INVALID_PARAMETER", "endpoints must be a non-empty list");
    }
    return list as Endpoint[];
  };
  app.post("/topics/:name/endpoints", async (c) => {
    allow(c, "admin");
    const name = c.req.param("name");
    for (const e of endpointsOf(await c.req.json().catch(() => undefined))) {
      if (typeof e.url !== "string") {
        throw new BrokerError("INVALID_PARAMETER", "An endpoint needs a url");
      }
      await plumbing.addEndpoint(name, endpointId(e.name, e.url), e.url);
    }
    return c.body(null, 200);
  });
  app.delete("/topics/:name/endpoints", async (c) => {
    allow(c, "admin");
    const name = c.req.param("name");
    const subs = await api.call((b) => plumbing.endpoints(b, name));
    for (const e of endpointsOf(await c.req.json().catch(() => undefined))) {
      const gone = subs.filter((s) =>
        (e.url !== undefined && s.url === e.url) ||
        (e.name !== undefined && endpointName(s) === e.name)
      );
      for (const s of gone) await api.call((b) => b.deleteSubscription(s.group));
      plumbing.forget(groupTopic(name));
    }
    if ((await api.call((b) => plumbing.endpoints(b, name))).length === 0) {
      await api.call((b) => b.deleteTopic(groupTopic(name))).catch(() => {});
    }
    return c.body(null, 200);
  });
  app.get("/topics", async (c) => {
    allow(c, "admin");
    const subs = (await api.call((b) => b.listSubscriptions())).filter((s) =>
      s.dialect === "qstash" && s.topic.startsWith(QSTASH_URL_GROUP_PREFIX)
    );
    const names = [...new Set(subs.map((s) => s.topic))];
    return c.json(names.map((t) => groupView(t, subs.filter((s) => s.topic === t))));
  });
  app.get("/topics/:name", async (c) => {
    allow(c, "admin");
    const name = c.req.param("name");
    const subs = await api.call((b) => plumbing.endpoints(b, name));
    if (subs.length === 0) throw new BrokerError("TOPIC_NOT_FOUND", `No URL group ${name}`);
    return c.json(groupView(groupTopic(name), subs));
  });
  app.delete("/topics/:name", async (c) => {
    allow(c, "admin");
    const name = c.req.param("name");
    const subs = await api.call((b) => plumbing.endpoints(b, name));
    if (subs.length === 0) throw new BrokerError("TOPIC_NOT_FOUND", `No URL group ${name}`);
    for (const s of subs) await api.call((b) => b.deleteSubscription(s.group));
    plumbing.forget(groupTopic(name));
    await api.call((b) => b.deleteTopic(groupTopic(name)));
    return c.body(null, 200);
  });
}

function endpointId(name: string | undefined, url: string): string {
  if (name !== undefined) return "n-" + checkQstashName("endpoint", name);
  return "u-" + createHash("sha256").update(url).digest("hex").slice(0, 16);
}

function endpointName(s: SubscriptionView): string | undefined {
  const id = s.group.slice(s.group.lastIndexOf(QSTASH_ENDPOINT_SEPARATOR) + 2);
  return id.startsWith("n-") ? id.slice(2) : undefined;
}

function groupView(topic: string, subs: SubscriptionView[]) {
  return {
    name: topic.slice(QSTASH_URL_GROUP_PREFIX.length),
    createdAt: Math.min(...subs.map((s) => s.createdAt)),
    updatedAt: Math.max(...subs.map((s) => s.updatedAt)),
    endpoints: subs.map((s) => {
      const name = endpointName(s);
      return name ? { name, url: s.url } : { url: s.url };
    }),
  };
}
