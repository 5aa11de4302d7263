// Produce across broker groups (issue #26; RocketMQ's producer, reference/rocketmq.md §12):
// an explicit global queue goes to the group that owns it; a sharding key hashes (the
// broker's own hash, SelectMessageQueueByHash) over the topic's writable queues of active
// groups sorted by global id, faults or not, so the order per key holds; anything else
// goes round robin over those queues, skipping groups in fault backoff, and is retried on
// another group (clusterSendRetryTimes) when its group fails.
import { BrokerError } from "../protocol/errors.ts";
import type { BatchItemResult, ProduceMessage, ProduceResult } from "../protocol/types.ts";
import { javaStringHashCode } from "../../storage/message/record.ts";
import { itemError } from "../core/errors.ts";
import type { ClusterContext } from "./context.ts";
import type { TopicQueues, WritableQueue } from "./queue_map.ts";
import { isGroupFailure } from "./fault.ts";
import type { GroupLink } from "./route_source.ts";

export class ProduceRouter {
  readonly #roundRobin = new Map<string, number>();

  constructor(private readonly ctx: ClusterContext) {}

  produce(topic: string, message: ProduceMessage): Promise<ProduceResult> {
    return this.send(topic, message, (c, m) => c.produce(topic, m));
  }

  /** One message to one group, picked and retried as produce is (transactions use it). */
  async send<R extends ProduceResult>(
    topic: string,
    message: ProduceMessage,
    put: (client: GroupLink["client"], local: ProduceMessage, link: GroupLink) => Promise<R>,
  ): Promise<R> {
    const retries = retryable(message) ? this.ctx.settings.clusterSendRetryTimes : 0;
    const avoid = new Set<string>();
    for (let attempt = 0;; attempt++) {
      const target = await this.pick(await this.ctx.queues(topic, true), message, avoid);
      const link = target.group.link;
      try {
        const local = { ...message, queueId: target.localQueueId };
        const r = await this.ctx.call(link, topic, (c) => put(c, local, link));
        return { ...r, queueId: target.queueId };
      } catch (err) {
        if (attempt >= retries || !isGroupFailure(err)) throw err;
        avoid.add(link.name);
      }
    }
  }

  /** Split per group, answered per item in the original order and indexes. */
  async produceBatch(topic: string, messages: ProduceMessage[]): Promise<BatchItemResult[]> {
    const results: BatchItemResult[] = new Array(messages.length);
    const avoid = new Set<string>();
    let pending = messages.map((_, i) => i);
    for (let attempt = 0; pending.length > 0; attempt++) {
      const queues = await this.ctx.queues(topic, true);
      const plan = new Map<
        string,
        { link: GroupLink; items: number[]; targets: WritableQueue[] }
      >();
      for (const i of pending) {
        try {
          const target = await this.pick(queues, messages[i], avoid);
          const link = target.group.link;
          const part = plan.get(link.name) ?? { link, items: [], targets: [] };
          plan.set(link.name, part);
          part.items.push(i);
          part.targets.push(target);
        } catch (err) {
          results[i] = failed(i, err);
        }
      }
      const again: number[] = [];
      await Promise.all([...plan.values()].map(async ({ link, items, targets }) => {
        const local = items.map((i, j) => ({ ...messages[i], queueId: targets[j].localQueueId }));
        try {
          const answers = await this.ctx.call(link, topic, (c) => c.produceBatch(topic, local));
          answers.forEach((r, j) => {
            results[items[j]] = r.ok
              ? { ...r, queueId: targets[j].queueId }
              : { ...r, index: items[j] };
          });
        } catch (err) {
          const retry = isGroupFailure(err) && attempt < this.ctx.settings.clusterSendRetryTimes;
          if (retry) avoid.add(link.name);
          for (const i of items) {
            if (retry && retryable(messages[i])) again.push(i);
            else results[i] = failed(i, err);
          }
        }
      }));
      pending = again.sort((a, b) => a - b);
    }
    return results;
  }

  /** Where one message goes: its queue, its key's queue, or the next by round robin. */
  async pick(
    queues: TopicQueues,
    message: ProduceMessage,
    avoid: ReadonlySet<string> = new Set(),
  ): Promise<WritableQueue> {
    if (message.queueId !== undefined) {
      const { group, localQueueId, queues: fresh } = await this.ctx.owner(
        queues.topic,
        message.queueId,
        true,
      );
      const target = fresh.writable().find((q) => q.queueId === message.queueId);
      if (target) return target;
      throw new BrokerError(
        "TOPIC_PERMISSION_DENIED",
        `Cannot write to queue ${message.queueId} of ${queues.topic}: broker group ${group.link.name} does not take writes to its queue ${localQueueId} (${group.state})`,
      );
    }
    const list = writableOrThrow(queues);
    if (message.shardingKey !== undefined) {
      return list[Math.abs(javaStringHashCode(message.shardingKey) % list.length)];
    }
    const topic = queues.topic;
    let next = this.#roundRobin.get(topic) ?? Math.floor(Math.random() * list.length);
    let fallback: WritableQueue | undefined;
    for (let i = 0; i < list.length; i++) {
      next = (next + 1) & 0x7fffffff;
      const q = list[next % list.length];
      if (avoid.has(q.group.link.name)) continue;
      fallback ??= q;
      if (this.ctx.faults.available(q.group.link.name)) {
        this.#roundRobin.set(topic, next);
        return q;
      }
    }
    this.#roundRobin.set(topic, next);
    // Every group in backoff (or tried): the next not tried, else the next at all.
    return fallback ?? list[next % list.length];
  }
}

function retryable(m: ProduceMessage): boolean {
  return m.queueId === undefined && m.shardingKey === undefined;
}

function writableOrThrow(queues: TopicQueues): WritableQueue[] {
  const list = queues.writable();
  if (list.length > 0) return list;
  if (queues.all().length === 0) {
    throw new BrokerError(
      "BROKER_UNAVAILABLE",
      `No broker group of topic ${queues.topic} is live`,
    );
  }
  throw new BrokerError(
    "TOPIC_PERMISSION_DENIED",
    `Cannot write to ${queues.topic}: none of its broker groups takes writes (draining or read-only)`,
  );
}

function failed(index: number, err: unknown): BatchItemResult {
  return { ok: false, index, error: itemError(err) };
}
