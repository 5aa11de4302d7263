// Finding messages across broker groups (issue #26): a message id says which group made it
// (its first 20 hex characters are the master's IP, PID and random: GroupLink.idPrefix,
// as RocketMQ's offset message id carries the broker address), so that group is asked
// first, then the others; a search by key asks every group of the topic and merges.
// Scheduled messages are cancelled or moved the same way.
import type { FindQuery, ScheduledOutcome, WireMessage } from "../protocol/types.ts";
import type { ClusterContext } from "./context.ts";
import type { GroupLink } from "./route_source.ts";
import { fanOut, firstFound } from "./fanout.ts";
import { globalized } from "./queue_map.ts";
import { messageIn, routeOf } from "./global_ids.ts";

const ID_PREFIX_CHARS = 20;

/** Groups whose idPrefix matches `messageId` first, the rest after, each in given order. */
export function byIdPrefix(links: readonly GroupLink[], messageId: string): GroupLink[] {
  const prefix = String(messageId).slice(0, ID_PREFIX_CHARS).toUpperCase();
  const mine = (l: GroupLink) => l.idPrefix !== undefined && l.idPrefix.toUpperCase() === prefix;
  return [...links.filter(mine), ...links.filter((l) => !mine(l))];
}

export class LookupRouter {
  constructor(private readonly ctx: ClusterContext) {}

  async getMessageById(messageId: string, topic?: string): Promise<WireMessage> {
    const links = byIdPrefix(await this.ctx.groups(), messageId);
    const { link, value } = await firstFound(
      this.ctx,
      links,
      topic,
      "MESSAGE_NOT_FOUND",
      (c) => c.getMessageById(messageId, topic),
    );
    return this.#globalized(link, value);
  }

  async findMessages(topic: string, query: FindQuery): Promise<WireMessage[]> {
    const queues = await this.ctx.queues(topic);
    const answers = await fanOut(
      this.ctx,
      queues.all().map((g) => g.link),
      topic,
      (c) => c.findMessages(topic, query),
    );
    const merged = answers.flatMap(({ link, value }) =>
      value.map((m) => globalized(queues, link.name, m))
    ).sort((a, b) => a.storeTimestamp - b.storeTimestamp);
    return query.maxNum === undefined ? merged : merged.slice(0, query.maxNum);
  }

  async cancelScheduled(topic: string, messageId: string): Promise<ScheduledOutcome> {
    const links = byIdPrefix(await this.#topicLinks(topic), messageId);
    const found = await firstFound(
      this.ctx,
      links,
      topic,
      "MESSAGE_NOT_FOUND",
      (c) => c.cancelScheduled(topic, messageId),
    );
    return found.value;
  }

  async rescheduleScheduled(
    topic: string,
    messageId: string,
    deliverAt: number,
  ): Promise<ScheduledOutcome> {
    const links = byIdPrefix(await this.#topicLinks(topic), messageId);
    const found = await firstFound(
      this.ctx,
      links,
      topic,
      "MESSAGE_NOT_FOUND",
      (c) => c.rescheduleScheduled(topic, messageId, deliverAt),
    );
    return found.value;
  }

  async cancelScheduledByKey(topic: string, key: string): Promise<ScheduledOutcome[]> {
    const answers = await fanOut(
      this.ctx,
      await this.#topicLinks(topic),
      topic,
      (c) => c.cancelScheduledByKey(topic, key),
    );
    return answers.flatMap((a) => a.value);
  }

  async #topicLinks(topic: string): Promise<GroupLink[]> {
    return (await this.ctx.queues(topic)).all().map((g) => g.link);
  }

  async #globalized(link: GroupLink, m: WireMessage): Promise<WireMessage> {
    return messageIn(await routeOf(this.ctx, m.topic), link.name, m);
  }
}
