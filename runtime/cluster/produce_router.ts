// Produce across broker groups (issue #26; RocketMQ's producer, reference/rocketmq.md §12):
// an explicit global queue goes to the group that owns it; a sharding key hashes (the
// broker's own hash, SelectMessageQueueByHash) over the topic's writable queues of active
// groups sorted by global id, faults or not, so the order per key holds; an Idempotency-Key
// hashes the same way (a broker remembers keys per topic, so a client's retry must land on
// the same group to be answered idempotentReplay) and is never moved to another group;
// anything else goes round robin over those queues, skipping groups in fault backoff, and
// is retried on another group (clusterSendRetryTimes) when its group fails or answers
// TOPIC_PERMISSION_DENIED / TOPIC_NOT_FOUND (drained, or the topic not there: the route is
// re-read first), as RocketMQ's producer retries NO_PERMISSION and TOPIC_NOT_EXIST.
import { BrokerError } from "../protocol/errors.ts";
import type { BatchItemResult, ProduceMessage, ProduceResult } from "../protocol/types.ts";
import { javaStringHashCode } from "../../storage/message/java_hash.ts";
import { itemError } from "../core/errors.ts";
import type { ClusterContext } from "./context.ts";
import { noGroupFor, type TopicQueues, type WritableQueue } from "./queue_map.ts";
import { isGroupFailure, isSendElsewhere } from "./fault.ts";
import type { GroupLink } from "./route_source.ts";
import { ProduceCoalescer } from "./produce_coalescer.ts";

export class ProduceRouter {
  readonly #roundRobin = new Map<string, number>();
  /** Concurrent single produces to one group and topic go as one batch call. */
  readonly coalescer: ProduceCoalescer;

  constructor(private readonly ctx: ClusterContext) {
    this.coalescer = new ProduceCoalescer(ctx.settings);
  }

  produce(topic: string, message: ProduceMessage): Promise<ProduceResult> {
    return this.send(topic, message, (_c, m, link) => this.coalescer.produce(link, topic, m));
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
      const target = await this.pick(await this.#queues(topic), message, avoid);
      const link = target.group.link;
      try {
        const local = { ...message, queueId: target.localQueueId };
        const r = await this.ctx.call(link, topic, (c) => put(c, local, link));
        return { ...r, queueId: target.queueId };
      } catch (err) {
        if (attempt >= retries || !isSendElsewhere(err)) throw err;
        this.#moveOn(topic, link, err, avoid);
      }
    }
  }

  /** Split per group, answered per item in the original order and indexes. */
  async produceBatch(topic: string, messages: ProduceMessage[]): Promise<BatchItemResult[]> {
    const results: BatchItemResult[] = new Array(messages.length);
    const avoid = new Set<string>();
    let pending = messages.map((_, i) => i);
    for (let attempt = 0; pending.length > 0; attempt++) {
      const queues = await this.#queues(topic);
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
          const retry = isSendElsewhere(err) &&
            attempt < this.ctx.settings.clusterSendRetryTimes &&
            items.some((i) => retryable(messages[i]));
          if (retry) this.#moveOn(topic, link, err, avoid);
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

  /** The topic's round-robin counter, kept for at most clusterRotationKeysMax topics (a
   * deleted topic's entry ages out, least recently used first). */
  #advance(topic: string, next: number): void {
    this.#roundRobin.delete(topic);
    this.#roundRobin.set(topic, next);
    if (this.#roundRobin.size > this.ctx.settings.clusterRotationKeysMax) {
      this.#roundRobin.delete(this.#roundRobin.keys().next().value!);
    }
  }

  /** The topic's queues; an unknown topic is created only when auto-create is on
   * (clusterAutoCreateTopicEnable), as a single broker's autoCreateTopicEnable decides. */
  #queues(topic: string): Promise<TopicQueues> {
    return this.ctx.queues(topic, this.ctx.settings.clusterAutoCreateTopicEnable);
  }

  /** After `link` refused or failed: try another group, on a re-read route when the group
   * refused (a group failure has dropped the route in ctx.call already). */
  #moveOn(topic: string, link: GroupLink, err: unknown, avoid: Set<string>): void {
    avoid.add(link.name);
    if (!isGroupFailure(err)) this.ctx.routes.invalidate(topic);
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
    const key = message.shardingKey ?? message.idempotencyKey;
    if (key !== undefined) return list[Math.abs(javaStringHashCode(key) % list.length)];
    const topic = queues.topic;
    let next = this.#roundRobin.get(topic) ?? Math.floor(Math.random() * list.length);
    let fallback: WritableQueue | undefined;
    for (let i = 0; i < list.length; i++) {
      next = (next + 1) & 0x7fffffff;
      const q = list[next % list.length];
      if (avoid.has(q.group.link.name)) continue;
      fallback ??= q;
      if (this.ctx.faults.available(q.group.link.name, q.group.link.epoch)) {
        this.#advance(topic, next);
        return q;
      }
    }
    this.#advance(topic, next);
    // Every group in backoff (or tried): the next not tried, else the next at all.
    return fallback ?? list[next % list.length];
  }
}

/** Only a message with no queue, sharding key or idempotency key may change group. */
function retryable(m: ProduceMessage): boolean {
  return m.queueId === undefined && m.shardingKey === undefined &&
    m.idempotencyKey === undefined;
}

function writableOrThrow(queues: TopicQueues): WritableQueue[] {
  const list = queues.writable();
  if (list.length > 0) return list;
  throw noGroupFor(
    queues,
    `write to ${queues.topic}`,
    "none of its broker groups takes writes (draining or read-only)",
  );
}

function failed(index: number, err: unknown): BatchItemResult {
  return { ok: false, index, error: itemError(err) };
}
