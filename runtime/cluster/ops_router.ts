// Health and the operations views across broker groups (issue #26): each view asks every
// live group (or every group of the topic) and adds up — queue ids made global, lags and
// counts summed, one node list for the cluster. A group whose client lacks an operations
// view (GroupLink.client is Partial<OpsApi>) is left out of it.
import type { GroupView, HealthInfo } from "../protocol/types.ts";
import type { ClusterNode, ClusterView, GroupProgress, TopicStats } from "../protocol/ops_types.ts";
import type { ClusterContext } from "./context.ts";
import { fanOut, firstLive } from "./fanout.ts";
import { globalized } from "./queue_map.ts";
import { idIn, routeOf } from "./global_ids.ts";
import { isGroupFailure } from "./fault.ts";
import type { GroupLink } from "./route_source.ts";

export class OpsRouter {
  constructor(private readonly ctx: ClusterContext) {}

  /** "ok" when every live group is; the broker name lists the groups; offsets added. */
  async health(): Promise<HealthInfo> {
    const links = await this.ctx.groups();
    const settled = await Promise.allSettled(
      links.map((l) => this.ctx.call(l, undefined, (c) => c.health())),
    );
    const ok = settled.flatMap((s) => s.status === "fulfilled" ? [s.value] : []);
    const failed = settled.find((s) => s.status === "rejected");
    if (ok.length === 0) {
      if (failed && !isGroupFailure(failed.reason)) throw failed.reason;
      firstLive([]); // throws BROKER_UNAVAILABLE
    }
    return {
      status: failed === undefined && ok.every((h) => h.status === "ok") ? "ok" : "degraded",
      brokerName: links.map((l) => l.name).join(","),
      writable: ok.some((h) => h.writable),
      flushDiskType: ok[0]?.flushDiskType ?? "",
      commitLogMaxOffset: ok.reduce((n, h) => n + h.commitLogMaxOffset, 0),
      runtime: ok[0]?.runtime ?? "",
    };
  }

  async listGroups(): Promise<GroupView[]> {
    const link = firstLive(await this.#withOps("listGroups"));
    return this.ctx.call(link, undefined, (c) => c.listGroups!());
  }

  async topicStats(topic: string): Promise<TopicStats> {
    const queues = await this.ctx.queues(topic);
    const links = queues.all().map((g) => g.link).filter((l) => l.client.topicStats);
    const answers = await fanOut(this.ctx, links, topic, (c) => c.topicStats!(topic));
    const sum = (
      k: "messages" | "messagesWritten" | "bytesProducedSinceStart" | "produceRatePerSec",
    ) => answers.reduce((n, a) => n + a.value[k], 0);
    return {
      topic,
      queues: answers.flatMap(({ link, value }) =>
        value.queues.map((q) => globalized(queues, link.name, q))
      ).sort((a, b) => a.queueId - b.queueId),
      messages: sum("messages"),
      messagesWritten: sum("messagesWritten"),
      bytesProducedSinceStart: sum("bytesProducedSinceStart"),
      produceRatePerSec: Math.round(sum("produceRatePerSec") * 100) / 100,
    };
  }

  async groupProgress(group: string): Promise<GroupProgress> {
    const links = await this.#withOps("groupProgress");
    const answers = await fanOut(this.ctx, links, undefined, (c) => c.groupProgress!(group), [
      "GROUP_NOT_FOUND",
    ]);
    const topics = new Map<string, GroupProgress["topics"][number]>();
    for (const { link, value } of answers) {
      for (const t of value.topics) {
        const route = await routeOf(this.ctx, t.topic);
        const entry = topics.get(t.topic) ?? { topic: t.topic, queues: [], totalLag: 0 };
        topics.set(t.topic, entry);
        entry.queues.push(
          ...t.queues.map((q) => ({ ...q, queueId: idIn(route, link.name, q.queueId) })),
        );
        entry.totalLag += t.totalLag;
      }
    }
    for (const t of topics.values()) t.queues.sort((a, b) => a.queueId - b.queueId);
    return {
      group: answers[0].value.group,
      topics: [...topics.values()].sort((a, b) => a.topic < b.topic ? -1 : 1),
      totalLag: answers.reduce((n, a) => n + a.value.totalLag, 0),
      dlqMessages: answers.reduce((n, a) => n + a.value.dlqMessages, 0),
    };
  }

  async clusterView(): Promise<ClusterView> {
    const links = await this.#withOps("clusterView");
    const answers = await fanOut(this.ctx, links, undefined, (c) => c.clusterView!());
    const nodes: ClusterNode[] = answers.flatMap((a) => a.value.nodes);
    return {
      mode: answers.some((a) => a.value.mode === "replicated") ? "replicated" : "single",
      nodes,
    };
  }

  async #withOps(view: "listGroups" | "groupProgress" | "clusterView"): Promise<GroupLink[]> {
    return (await this.ctx.groups()).filter((l) => l.client[view] !== undefined);
  }
}
