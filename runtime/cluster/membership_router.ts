// Consumer membership across broker groups (issue #26): every live group hears each
// heartbeat (so locks and POP on any group know the member), with the subscriptions of the
// topics that group serves; an assignment is computed by one group — the first by name of
// the topic's readable groups — over the topic's GLOBAL queue list, so RocketMQ's six
// strategies rebalance over all groups' queues at once (AVG over 3 groups × 1 queue and 3
// consumers is one queue each).
import type { AssignmentView, HeartbeatRequest, MembersView } from "../protocol/types.ts";
import { globalQueueId } from "../protocol/cluster_types.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { ClusterContext } from "./context.ts";
import { forGroup } from "./group_provision.ts";
import { broadcast } from "./fanout.ts";
import { byName, noGroupFor, type TopicQueues } from "./queue_map.ts";

/** Each slot's broker group name, index = slot ("" for a slot no group holds now): the
 * computing group gives every queue its own group's name, so the machine-room strategies
 * see each group's room (`room@name`). */
function slotBrokers(queues: TopicQueues): string[] {
  const names: string[] = [];
  for (const g of queues.all()) names[g.slot] = g.link.name;
  return Array.from(names, (n) => n ?? "");
}

export class MembershipRouter {
  constructor(private readonly ctx: ClusterContext) {}

  async heartbeat(group: string, data: HeartbeatRequest): Promise<MembersView> {
    const subscriptions = data.subscriptions ?? [];
    const hosts = await Promise.all(subscriptions.map((s) => this.#hosts(s.topic)));
    const links = await this.ctx.groups();
    const answers = await broadcast(
      this.ctx,
      `heartbeat of ${group}`,
      links,
      undefined,
      (c, link) =>
        c.heartbeat(group, {
          ...data,
          subscriptions: subscriptions.filter((_, i) => hosts[i].has(link.name)),
        }),
      { consumerGroup: group },
    );
    return answers[0].value;
  }

  /** The groups serving `topic`; none for a topic that does not exist yet (a consumer may
   * start before its topic is created: its subscription reaches the groups once it is). */
  async #hosts(topic: string): Promise<Set<string>> {
    try {
      return new Set((await this.ctx.queues(topic)).all().map((g) => g.link.name));
    } catch (err) {
      if (err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND") return new Set();
      throw err;
    }
  }

  async unregister(group: string, clientId: string): Promise<MembersView> {
    const links = await this.ctx.groups();
    const answers = await broadcast(
      this.ctx,
      `unregister of ${clientId} from ${group}`,
      links,
      undefined,
      (c) => c.unregister(group, clientId),
      { absent: ["GROUP_NOT_FOUND"] },
    );
    return answers[0].value;
  }

  async assignment(
    group: string,
    clientId: string,
    topic: string,
    explicit?: number[],
  ): Promise<AssignmentView> {
    const queues = await this.ctx.queues(topic);
    const readable = queues.readable();
    const home = byName(readable.map((g) => g.link))[0];
    if (home === undefined) {
      throw noGroupFor(
        queues,
        `assign queues of ${topic}`,
        "none of its broker groups is readable",
      );
    }
    const queueIds = explicit ??
      readable.flatMap((g) =>
        Array.from({ length: g.readQueueNums }, (_, id) => globalQueueId(g.slot, id))
      ).sort((a, b) => a - b);
    return forGroup(
      this.ctx,
      home,
      topic,
      group,
      (c) => c.assignment(group, clientId, topic, { queueIds, slotBrokers: slotBrokers(queues) }),
    );
  }
}
