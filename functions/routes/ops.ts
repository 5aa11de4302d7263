// Operations views for the admin CLI and the dashboard: every group, a topic's statistics,
// a group's progress across topics with lag per queue, and the cluster's nodes.
import { createRoute, z } from "@hono/zod-openapi";
import type { BrokerClient, DrainStatusApi, OpsApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { HaApi, HaStatus } from "../../runtime/protocol/ha_api.ts";
import type { ClusterView as ClusterViewType } from "../../runtime/protocol/ops_types.ts";
import { groupParams, topicParams } from "./params.ts";
import { json, newRoutes, REFUSALS, type RouteDeps, type Routes, serve } from "./route.ts";
import { ClusterView, DrainStatus, GroupProgress, Groups, TopicStats } from "./ops_schemas.ts";

const listGroups = createRoute({
  method: "get",
  path: "/v1/groups",
  operationId: "listGroups",
  tags: ["groups"],
  summary: "List consumer groups",
  responses: { 200: json("Every group the API key may see", Groups), ...REFUSALS },
});

const topicStats = createRoute({
  method: "get",
  path: "/v1/topics/{topic}/stats",
  operationId: "topicStats",
  tags: ["topics"],
  summary: "A topic's messages, bytes, per-queue offsets and produce rate",
  request: { params: topicParams },
  responses: { 200: json("Topic statistics", TopicStats), ...REFUSALS },
});

const groupProgress = createRoute({
  method: "get",
  path: "/v1/groups/{group}/progress",
  operationId: "groupProgress",
  tags: ["groups"],
  summary: "The group's position and lag per queue on every topic it consumes",
  request: { params: groupParams },
  responses: { 200: json("Consumer progress", GroupProgress), ...REFUSALS },
});

const drainStatus = createRoute({
  method: "get",
  path: "/v1/topics/{topic}/drain-status",
  operationId: "drainStatus",
  tags: ["topics"],
  summary: "What is still owed on the topic on this broker (before its group leaves the route)",
  request: {
    params: topicParams,
    query: z.object({
      groups: z.string().optional().openapi({
        description: "More consumer groups to look at, comma-separated (known elsewhere)",
      }),
    }),
  },
  responses: { 200: json("Drain status", DrainStatus), ...REFUSALS },
});

const cluster = createRoute({
  method: "get",
  path: "/v1/cluster",
  operationId: "clusterView",
  tags: ["ha"],
  summary: "The broker group's nodes: roles, epochs, offsets and replica lag",
  responses: { 200: json("Cluster view", ClusterView), ...REFUSALS },
});

/** The operations API of a resolved broker; a client lacking it (an SDK client not wrapped
 * as functions/split.ts wraps it) is refused. */
function ops(b: BrokerClient): OpsApi {
  const o = b as Partial<OpsApi>;
  if (typeof o.topicStats !== "function") {
    throw new BrokerError(
      "BROKER_UNAVAILABLE",
      "Cannot answer: operations views are served by the broker's own HTTP port",
    );
  }
  return b as unknown as OpsApi;
}

/** The broker's drainStatus; a cluster router has none (it asks each group's master). */
function drainStatusOf(b: BrokerClient): DrainStatusApi["drainStatus"] {
  const d = b as Partial<DrainStatusApi>;
  if (typeof d.drainStatus !== "function") {
    throw new BrokerError(
      "BROKER_UNAVAILABLE",
      "Cannot answer: the drain status is served by each broker's own HTTP port",
    );
  }
  return (topic, groups) => d.drainStatus!(topic, groups);
}

export function opsRoutes(deps: RouteDeps<BrokerClient>, ha?: HaApi): Routes {
  const { api, allow, permits } = deps;
  const app = newRoutes();
  serve(app, listGroups, async (c) => {
    const groups = await api.call((b) => ops(b).listGroups());
    return c.json({ groups: groups.filter((g) => permits(c, "subscribe", { group: g.group })) });
  });
  serve(app, topicStats, async (c) => {
    const { topic } = topicParams.parse(c.req.param());
    allow(c, "see", { topic });
    return c.json(await api.call((b) => ops(b).topicStats(topic)));
  });
  serve(app, groupProgress, async (c) => {
    const { group } = groupParams.parse(c.req.param());
    allow(c, "subscribe", { group });
    const progress = await api.call((b) => ops(b).groupProgress(group));
    const topics = progress.topics.filter((t) => permits(c, "see", { topic: t.topic }));
    return c.json({ ...progress, topics });
  });
  serve(app, drainStatus, async (c) => {
    const { topic } = topicParams.parse(c.req.param());
    allow(c, "admin");
    const named = (c.req.query("groups") ?? "").split(",").filter((g) => g !== "");
    return c.json(await api.call((b) => drainStatusOf(b)(topic, named)));
  });
  serve(app, cluster, async (c) => {
    allow(c, "admin");
    if (ha) return c.json(replicatedView(ha.status()));
    return c.json(await api.call((b) => ops(b).clusterView()));
  });
  return app;
}

/** A replica's view of its group: itself, its master, and the replicas the master tracks. */
function replicatedView(s: HaStatus): ClusterViewType {
  const nodes: ClusterViewType["nodes"] = [{
    brokerGroup: s.brokerGroup,
    brokerId: s.brokerId,
    role: s.role,
    epoch: s.epoch,
    maxOffset: s.maxOffset,
    inSync: s.slave?.inSync,
    lagBytes: s.slave ? Math.max(0, s.slave.masterMaxOffset - s.slave.heldOffset) : undefined,
  }];
  if (s.master && s.master.brokerId !== s.brokerId) {
    nodes.push({
      brokerGroup: s.brokerGroup,
      brokerId: s.master.brokerId,
      role: "master",
      epoch: s.master.epoch,
      maxOffset: s.slave?.masterMaxOffset ?? 0,
      address: s.master.httpAddress,
    });
  }
  for (const r of s.replicas ?? []) {
    nodes.push({
      brokerGroup: s.brokerGroup,
      brokerId: r.brokerId,
      role: "slave",
      epoch: s.epoch,
      maxOffset: r.ackedOffset,
      inSync: r.inSync,
      lagBytes: Math.max(0, s.maxOffset - r.ackedOffset),
    });
  }
  return { mode: "replicated", nodes };
}
