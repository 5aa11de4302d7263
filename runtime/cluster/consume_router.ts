// Pull, offsets and locks across broker groups (issue #26): a call about one queue goes to
// the group that owns its global id (with the group's own id); offsets of a whole topic
// are every group's, merged (queue ids global, lag summed). Offsets live with the group
// that owns the queue, as RocketMQ keeps them on the queue's broker.
import type {
  GroupOffsets,
  PullRequest,
  PullResult,
  QueueOffsetInfo,
  SignalSource,
} from "../protocol/types.ts";
import type { ClusterContext } from "./context.ts";
import { forGroup } from "./group_provision.ts";
import { globalized, type TopicQueues } from "./queue_map.ts";
import { fanOut } from "./fanout.ts";
import type { GroupLink } from "./route_source.ts";

export class ConsumeRouter {
  constructor(private readonly ctx: ClusterContext) {}

  async pull(
    topic: string,
    queueId: number,
    request: PullRequest,
    signal?: SignalSource,
  ): Promise<PullResult> {
    const { queues, group, localQueueId } = await this.ctx.owner(topic, queueId);
    const link = group.link;
    const pull = (c: GroupLink["client"]) => c.pull(topic, localQueueId, request, signal);
    const r = request.group === undefined
      ? await this.ctx.call(link, topic, pull)
      : await forGroup(this.ctx, link, topic, request.group, pull);
    return { ...r, messages: r.messages.map((m) => globalized(queues, link.name, m)) };
  }

  async commitOffset(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<QueueOffsetInfo> {
    const { queues, group: g, localQueueId } = await this.ctx.owner(topic, queueId);
    const r = await forGroup(
      this.ctx,
      g.link,
      topic,
      group,
      (c) => c.commitOffset(group, topic, localQueueId, offset),
    );
    return globalized(queues, g.link.name, r);
  }

  async getOffset(group: string, topic: string, queueId: number): Promise<QueueOffsetInfo> {
    const { queues, group: g, localQueueId } = await this.ctx.owner(topic, queueId);
    const r = await forGroup(
      this.ctx,
      g.link,
      topic,
      group,
      (c) => c.getOffset(group, topic, localQueueId),
    );
    return globalized(queues, g.link.name, r);
  }

  getOffsets(group: string, topic: string): Promise<GroupOffsets> {
    return this.#merged(group, topic, (c) => c.getOffsets(group, topic));
  }

  resetOffsetsByTime(group: string, topic: string, timestamp: number): Promise<GroupOffsets> {
    return this.#merged(group, topic, (c) => c.resetOffsetsByTime(group, topic, timestamp));
  }

  async #merged(
    group: string,
    topic: string,
    f: (client: GroupLink["client"]) => Promise<GroupOffsets>,
  ): Promise<GroupOffsets> {
    const queues = await this.ctx.queues(topic);
    const links = queues.all().map((g) => g.link);
    const answers = await fanOut(this.ctx, links, topic, f, [], group);
    return mergeOffsets(queues, group, answers);
  }

  /** Locks (or unlocks) queues at the groups that own them; the global ids now held. */
  async lockQueues(
    group: string,
    clientId: string,
    topic: string,
    queueIds: number[],
    unlock?: boolean,
  ): Promise<number[]> {
    const parts = new Map<string, { link: GroupLink; local: number[] }>();
    let queues: TopicQueues | undefined;
    for (const id of queueIds) {
      const owner = await this.ctx.owner(topic, id);
      queues = owner.queues;
      const part = parts.get(owner.group.link.name) ?? { link: owner.group.link, local: [] };
      parts.set(owner.group.link.name, part);
      part.local.push(owner.localQueueId);
    }
    if (parts.size === 0) {
      // Nothing to lock: the first group answers the membership check as the broker would.
      const first = (await this.ctx.queues(topic)).all()[0]?.link;
      if (first === undefined) return [];
      return forGroup(
        this.ctx,
        first,
        topic,
        group,
        (c) => c.lockQueues(group, clientId, topic, [], unlock),
      );
    }
    const held = await Promise.all(
      [...parts.values()].map(({ link, local }) =>
        forGroup(
          this.ctx,
          link,
          topic,
          group,
          (c) => c.lockQueues(group, clientId, topic, local, unlock),
        )
          .then((ids) => ids.map((id) => queues!.toGlobal(link.name, id)))
      ),
    );
    return held.flat().sort((a, b) => a - b);
  }
}

export function mergeOffsets(
  queues: TopicQueues,
  group: string,
  answers: { link: GroupLink; value: GroupOffsets }[],
): GroupOffsets {
  const merged = answers.flatMap(({ link, value }) =>
    value.queues.map((q) => globalized(queues, link.name, q))
  ).sort((a, b) => a.queueId - b.queueId);
  const totalLag = answers.reduce((sum, a) => sum + a.value.totalLag, 0);
  return { group, topic: queues.topic, queues: merged, totalLag };
}
