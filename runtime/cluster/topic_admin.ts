// Topic administration through the cluster router (docs/cluster.md, control plane): a
// topic is created or changed on each of its broker groups with the group's own queue
// counts, then its route record is written with compare-and-set; reads aggregate the
// groups (topic_aggregate.ts); expansion, drain and removal are in topic_expansion.ts.
// The data-plane client (runtime/cluster/client*.ts) hands these calls here.
import type { AdminApi, ClusterAdminApi } from "../protocol/core_api.ts";
import { BrokerError } from "../protocol/errors.ts";
import {
  checkQueueCountsOnGroup,
  checkSlot,
  type TopicRouteView,
} from "../protocol/cluster_types.ts";
import { PERM_WRITE, type TopicConfig, type TopicUpsert } from "../protocol/types.ts";
import { checkUserTopic } from "../protocol/names.ts";
import type { LiveGroups } from "./route_join.ts";
import { newRecord } from "./topic_records.ts";
import type { TopicRouteRecord } from "./route_record.ts";
import { aggregateTopic, aggregateTopics } from "./topic_aggregate.ts";
import { copyTopicConsumers } from "./topic_join_copy.ts";
import type { GroupLink } from "./route_source.ts";
import {
  addTopicGroup,
  type AdminRouteSource,
  drainTopicGroup,
  removeTopicGroup,
} from "./topic_expansion.ts";

export type { AdminRouteSource } from "./topic_expansion.ts";

type TopicAdmin = Pick<AdminApi, "upsertTopic" | "getTopic" | "listTopics" | "deleteTopic">;

export class ClusterTopicAdmin implements TopicAdmin, ClusterAdminApi {
  constructor(private readonly source: AdminRouteSource) {}

  async upsertTopic(name: string, update: TopicUpsert): Promise<TopicConfig> {
    checkUserTopic(name);
    const { brokerGroups, brokerGroupCount, ...local } = update;
    checkQueueCountsOnGroup(name, local);
    const live = await this.#fresh(name);
    const current = await this.#record(name);
    const joining = chooseGroups(live, current, brokerGroups, brokerGroupCount);
    if (joining.length > 0) checkSlot(name, (current?.nextSlot ?? 0) + joining.length - 1);
    const members = current?.groups ?? [];
    // Existing groups keep their state: a draining group's topic stays read-only.
    await Promise.all(members.map((m) => {
      const link = live.links.find((l) => l.name === m.brokerGroup);
      const perm = local.perm !== undefined && m.state === "draining"
        ? local.perm & ~PERM_WRITE
        : local.perm;
      return link?.client.upsertTopic(name, { ...local, ...(perm !== undefined && { perm }) });
    }));
    const template = current && !hasCounts(local) ? await this.#template(name) : {};
    checkQueueCountsOnGroup(name, { ...template, ...local });
    const model = current && joining.length > 0 ? await this.#member(name) : undefined;
    await Promise.all(joining.map(async (g) => {
      const link = live.links.find((l) => l.name === g)!;
      await link.client.upsertTopic(name, { ...template, ...local });
      // Consumers first: the record below is what makes routers write to the group.
      if (model) await copyTopicConsumers(model, link, name);
    }));
    await this.source.records.update(name, (record) => {
      const base = record ?? newRecord(name, [], 0);
      const added = joining.filter((g) => !base.groups.some((m) => m.brokerGroup === g));
      const order = local.order ?? base.order ?? false;
      if (record && added.length === 0 && order === (record.order ?? false)) return undefined;
      if (added.length > 0) checkSlot(name, base.nextSlot + added.length - 1);
      return {
        ...base,
        groups: [
          ...base.groups,
          ...added.map((brokerGroup, i) => ({
            brokerGroup,
            slot: base.nextSlot + i,
            state: "active" as const,
          })),
        ],
        nextSlot: base.nextSlot + added.length,
        ...(order ? { order: true } : { order: undefined }),
      };
    });
    this.source.invalidate(name);
    return this.getTopic(name);
  }

  async getTopic(name: string): Promise<TopicConfig> {
    const route = await this.source.topic(name);
    const configs = await Promise.all(route.groups.map((g) => g.link.client.getTopic(name)));
    return aggregateTopic(name, configs);
  }

  async listTopics(): Promise<TopicConfig[]> {
    const { links } = await this.source.live();
    return aggregateTopics(await Promise.all(links.map((l) => l.client.listTopics())));
  }

  async deleteTopic(name: string): Promise<void> {
    checkUserTopic(name);
    const live = await this.#fresh(name);
    const record = await this.source.records.get(name);
    const names = record
      ? record.groups.map((g) => g.brokerGroup)
      : live.entries.filter((e) => e.topics.some((t) => t.name === name)).map((e) => e.brokerName);
    const results = await Promise.all(
      live.links.filter((l) => names.includes(l.name)).map((l) =>
        l.client.deleteTopic(name).then(() => true, (err) => {
          if (err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND") return false;
          throw err;
        })
      ),
    );
    if (!record && !results.includes(true)) {
      throw new BrokerError("TOPIC_NOT_FOUND", `No topic ${name} in this cluster`);
    }
    if (record) await this.source.records.delete(name);
    this.source.invalidate(name);
  }

  async topicRoute(topic: string): Promise<TopicRouteView> {
    return (await this.source.topic(topic, { fresh: true })).view;
  }

  addTopicGroup(topic: string, brokerGroup: string): Promise<TopicRouteView> {
    return this.#changed(topic, addTopicGroup(this.source, topic, brokerGroup));
  }

  drainTopicGroup(topic: string, brokerGroup: string): Promise<TopicRouteView> {
    return this.#changed(topic, drainTopicGroup(this.source, topic, brokerGroup));
  }

  removeTopicGroup(
    topic: string,
    brokerGroup: string,
    options: { force?: boolean } = {},
  ): Promise<TopicRouteView> {
    return this.#changed(
      topic,
      removeTopicGroup(this.source, topic, brokerGroup, options.force ?? false),
    );
  }

  async #changed(topic: string, change: Promise<void>): Promise<TopicRouteView> {
    try {
      await change;
    } finally {
      this.source.invalidate(topic);
    }
    return (await this.source.topic(topic, { fresh: true })).view;
  }

  /** Live groups read now, not from the cache. */
  #fresh(topic: string): Promise<LiveGroups> {
    this.source.invalidate(topic);
    return this.source.live();
  }

  /** The record, synthesized first when groups hold the topic without one. */
  async #record(name: string): Promise<TopicRouteRecord | undefined> {
    await this.source.topic(name).catch((err) => {
      if (!(err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND")) throw err;
    });
    return await this.source.records.get(name);
  }

  /** A live group of the topic (active first): the model a joining group copies. */
  async #member(name: string): Promise<GroupLink | undefined> {
    const route = await this.source.topic(name);
    return (route.groups.find((g) => g.state === "active") ?? route.groups[0])?.link;
  }

  /** A group's settings of the topic, for a group that joins without explicit counts. */
  async #template(name: string): Promise<TopicUpsert> {
    const route = await this.source.topic(name);
    const first = route.groups.find((g) => g.state === "active") ?? route.groups[0];
    if (!first) return {};
    const { readQueueNums, writeQueueNums, perm, order } = await first.link.client.getTopic(name);
    return { readQueueNums, writeQueueNums, perm: perm | PERM_WRITE, order };
  }
}

function hasCounts(u: TopicUpsert): boolean {
  return u.readQueueNums !== undefined || u.writeQueueNums !== undefined;
}

/** The live groups that join the topic now (not in its record yet). */
function chooseGroups(
  live: LiveGroups,
  record: TopicRouteRecord | undefined,
  brokerGroups: string[] | undefined,
  count: number | undefined,
): string[] {
  const names = live.entries.map((e) => e.brokerName);
  const inRecord = new Set(record?.groups.map((g) => g.brokerGroup) ?? []);
  if (brokerGroups !== undefined && count !== undefined) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      "Cannot take both brokerGroups and brokerGroupCount: name the groups or give a count",
    );
  }
  if (brokerGroups !== undefined) {
    if (brokerGroups.length === 0) {
      throw new BrokerError("INVALID_PARAMETER", "brokerGroups must name at least one group");
    }
    const unknown = brokerGroups.filter((g) => !names.includes(g));
    if (unknown.length > 0) {
      throw new BrokerError(
        "BROKER_GROUP_NOT_FOUND",
        `No live broker group ${unknown.join(", ")} in this cluster (live: ${
          names.join(", ") || "none"
        })`,
      );
    }
    return [...new Set(brokerGroups)].filter((g) => !inRecord.has(g));
  }
  if (count !== undefined) {
    if (!Number.isInteger(count) || count < 1 || count > names.length) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `brokerGroupCount must be 1-${names.length} (the live groups), not ${count}`,
      );
    }
    // The groups holding the fewest topics join first; ties by name.
    const free = live.entries.filter((e) => !inRecord.has(e.brokerName))
      .sort((a, b) => a.topics.length - b.topics.length || a.brokerName.localeCompare(b.brokerName))
      .map((e) => e.brokerName);
    return free.slice(0, Math.max(0, count - inRecord.size));
  }
  if (record) return [];
  if (names.length === 0) {
    throw new BrokerError("BROKER_UNAVAILABLE", "No live broker group is registered");
  }
  return names;
}
