// Flow control: a key is a topic of its own whose "qstash" subscription carries the key's
// limits (parallelism = deliveries in flight, rate = starts per second). Get, list, pause
// and resume are the subscription's; pinning and rate resets are not served.
import type { Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QSTASH_FLOW_PREFIX } from "../../runtime/protocol/qstash.ts";
import type { SubscriptionView } from "../../runtime/protocol/types.ts";
import type { Env } from "../routes/route.ts";
import { qstashGroupsOf } from "./messages.ts";
import { flowTopic, type QstashDeps } from "./plumbing.ts";

export function flowControlRoutes(app: Hono<Env>, deps: QstashDeps) {
  const { api, allow } = deps;
  const flows = async () =>
    (await qstashGroupsOf(deps)).filter((s) => s.group.startsWith(QSTASH_FLOW_PREFIX));
  const one = async (key: string) => {
    const group = flowTopic(key);
    const found = (await flows()).find((s) => s.group === group);
    if (!found) throw new BrokerError("SUBSCRIPTION_NOT_FOUND", `No flow-control key ${key}`);
    return found;
  };
  app.get("/flowControl", async (c) => {
    allow(c, "admin");
    return c.json((await flows()).map(info));
  });
  app.get("/flowControl/:key", async (c) => {
    allow(c, "admin");
    return c.json(info(await one(c.req.param("key"))));
  });
  for (const action of ["pause", "resume"] as const) {
    app.post(`/flowControl/:key/${action}`, async (c) => {
      allow(c, "admin");
      const s = await one(c.req.param("key"));
      await api.call((b) => b.setSubscriptionPaused(s.group, action === "pause"));
      return c.body(null, 200);
    });
  }
  for (const action of ["pin", "unpin", "resetRate"]) {
    app.post(`/flowControl/:key/${action}`, () => {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Flow control ${action} is not supported by this broker's QStash API (docs/qstash.md)`,
      );
    });
  }
  app.get("/globalParallelism", async (c) => {
    allow(c, "admin");
    const subs = await qstashGroupsOf(deps);
    return c.json({
      parallelismMax: 0,
      parallelismCount: subs.reduce((n, s) => n + s.stats.inFlight, 0),
    });
  });
}

function info(s: SubscriptionView) {
  return {
    flowControlKey: s.group.slice(QSTASH_FLOW_PREFIX.length),
    waitListSize: s.stats.lag,
    parallelismMax: s.maxConcurrency,
    parallelismCount: s.stats.inFlight,
    rateMax: s.ratePerSec,
    rateCount: 0,
    ratePeriod: 1,
    ratePeriodStart: 0,
    isPaused: s.status === "paused",
    isPinnedParallelism: false,
    isPinnedRate: false,
  };
}
