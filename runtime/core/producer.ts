// The only writer of client messages (RocketMQ's SendMessageProcessor): every produce
// passes checkProduce(); every produce and every re-put of a stored message (DLQ redrive,
// already checked when it was first produced) passes the same shutdown and leadership
// gate and the same replication confirm.
import { crc32 } from "../../storage/crc32.ts";
import type { MessageStore, PutResult } from "../../storage/message_store.ts";
import { javaStringHashCode, type MessageInput } from "../../storage/message/record.ts";
import {
  PROPERTY_CONTENT_TYPE,
  PROPERTY_DELAY,
  PROPERTY_KEYS,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_SHARDING_KEY,
  PROPERTY_TAGS,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_UNIQ_KEY,
  SCHEDULE_TOPIC,
  TIMER_TOPIC,
} from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkProduce, type ProduceRules } from "../protocol/produce_rules.ts";
import type {
  BatchItemResult,
  ProduceMessage,
  ProduceResult,
  TopicConfig,
} from "../protocol/types.ts";
import type { IdempotencyCache } from "../idempotency.ts";
import type { MessageIdGenerator } from "../message_id.ts";
import { itemError, rethrowStoreError } from "./errors.ts";
import type { TopicRegistry } from "./topic_registry.ts";
import type { ReplicationGate } from "./replication_gate.ts";
import { LOOPBACK, type StoreHost } from "./store_host.ts";

export interface ProducerDeps {
  store: MessageStore;
  topics: TopicRegistry;
  idempotency: IdempotencyCache<ProduceResult>;
  ids: MessageIdGenerator;
  /** Set for a master of a replicated group. */
  replication?: ReplicationGate;
  storeHost: StoreHost;
  rules: ProduceRules;
  /** How far ahead a timer may be set (timerHorizonMs). */
  timerHorizonMs: number;
  nowMs: () => number;
  random: () => number;
}

export class Producer {
  readonly #d: ProducerDeps;
  readonly #roundRobin = new Map<string, number>();
  #closing = false;

  constructor(deps: ProducerDeps) {
    this.#d = deps;
  }

  /** Refuse writes from now on (graceful stop). */
  close(): void {
    this.#closing = true;
  }

  produce(topic: string, message: ProduceMessage): Promise<ProduceResult> {
    // A plain produce to an existing topic settles with the store's put and builds no
    // async frame; a refusal is a rejection, as from an async function.
    try {
      const config = this.writableTopic(topic);
      if (!(config instanceof Promise) && !message.idempotencyKey) {
        return this.#putOne(config, message);
      }
      return this.#produceAwaiting(topic, config, message);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async produceBatch(topic: string, messages: ProduceMessage[]): Promise<BatchItemResult[]> {
    const config = await this.writableTopic(topic);
    // All items are appended in this tick, so they share one write (and one fdatasync).
    const pending = messages.map((m) => {
      try {
        if (m.idempotencyKey) return this.produce(topic, m);
        return this.#putOne(config, m);
      } catch (err) {
        return Promise.reject(err);
      }
    });
    const settled = await Promise.allSettled(pending);
    return settled.map((s, index): BatchItemResult =>
      s.status === "fulfilled"
        ? { ok: true, ...s.value }
        : { ok: false, index, error: itemError(s.reason) }
    );
  }

  /** Re-puts a stored message (same id and properties) on `topic`, through the same gate. */
  putStored(topic: TopicConfig, input: Omit<MessageInput, "topic" | "queueId" | "storeHost">) {
    this.#checkOpen();
    const put: MessageInput = {
      ...input,
      topic: topic.name,
      queueId: this.#selectQueue(topic, undefined, undefined),
      storeHost: this.#d.storeHost,
    };
    const gate = this.#d.replication;
    return this.#d.store.putMessage(put).then(
      gate ? (r) => gate.confirm(r.commitLogOffset + r.size).then(() => r) : undefined,
      rethrowStoreError,
    );
  }

  /** Puts a broker-built record where it says (a transaction's half message, its commit to
   * the real queue, its op record: runtime/core/transactions.ts), through the same gate. */
  putInternal(input: Omit<MessageInput, "storeHost">): Promise<PutResult> {
    this.#checkOpen();
    const gate = this.#d.replication;
    return this.#d.store.putMessage({ ...input, storeHost: this.#d.storeHost }).then(
      gate ? (r) => gate.confirm(r.commitLogOffset + r.size).then(() => r) : undefined,
      rethrowStoreError,
    );
  }

  /** The queue a produce of `message` to `topic` would go to. */
  selectQueue(topic: TopicConfig, message: ProduceMessage): number {
    return this.#selectQueue(topic, message.queueId, message.shardingKey);
  }

  /** Refuses a message that breaks a produce rule (cron checks its message at creation). */
  checkMessage(message: ProduceMessage): void {
    checkProduce(message, this.#d.rules);
  }

  /** The topic if this broker may write to it now (creating it when auto-create is on). */
  writableTopic(name: string): TopicConfig | Promise<TopicConfig> {
    this.#checkOpen();
    return this.#d.topics.writable(name);
  }

  /** The topic of an existing transaction's commit: it must still exist, but may be
   * read-only (a drained group commits its half messages, as RocketMQ's
   * EndTransactionProcessor checks no permission). */
  committableTopic(name: string): Promise<TopicConfig> {
    this.#checkOpen();
    return this.#d.topics.get(name);
  }

  #checkOpen(): void {
    if (this.#closing) {
      throw new BrokerError(
        "STORE_NOT_WRITABLE",
        "Cannot accept writes as the broker is shutting down",
      );
    }
    this.#d.replication?.checkWritable();
  }

  async #produceAwaiting(
    topic: string,
    writable: TopicConfig | Promise<TopicConfig>,
    message: ProduceMessage,
  ): Promise<ProduceResult> {
    const config = await writable;
    if (!message.idempotencyKey) return this.#putOne(config, message);
    const [result, replay] = await this.#d.idempotency.run(
      `${topic}\u0000${message.idempotencyKey}`,
      fingerprint(message),
      () => this.#putOne(config, message),
    );
    return replay ? { ...result, idempotentReplay: true } : result;
  }

  #putOne(topic: TopicConfig, message: ProduceMessage): Promise<ProduceResult> {
    const d = this.#d;
    checkProduce(message, d.rules);
    const now = d.nowMs();
    let deliverMs: number | undefined;
    if (message.delayMs !== undefined || message.deliverAt !== undefined) {
      deliverMs = message.deliverAt ?? now + message.delayMs!;
      if (deliverMs - now > d.timerHorizonMs) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          `Cannot schedule ${
            deliverMs - now
          } ms ahead: the timer horizon is ${d.timerHorizonMs} ms (timerHorizonMs)`,
          { horizonMs: d.timerHorizonMs },
        );
      }
      if (deliverMs <= now) deliverMs = undefined; // due already: deliver at once
    }
    const level = message.delayLevel ?? 0;
    const queueId = this.#selectQueue(topic, message.queueId, message.shardingKey);
    const messageId = message.messageId ?? d.ids.next();
    const properties = new Map<string, string>();
    const user = message.properties;
    if (user !== undefined) { for (const k in user) properties.set(k, user[k]); }
    if (message.tag !== undefined) properties.set(PROPERTY_TAGS, message.tag);
    if (message.keys?.length) properties.set(PROPERTY_KEYS, message.keys.join(" "));
    properties.set(PROPERTY_UNIQ_KEY, messageId);
    if (message.shardingKey !== undefined) {
      properties.set(PROPERTY_SHARDING_KEY, message.shardingKey);
    }
    if (message.contentType !== undefined) {
      properties.set(PROPERTY_CONTENT_TYPE, message.contentType);
    }
    // Where the record goes now: its real queue, or a waiting place (timer topic or the
    // delay level's queue) that remembers the real one.
    let place = { topic: topic.name, queueId };
    let deliverAt: ((storeTimestamp: number) => number) | undefined;
    if (deliverMs !== undefined || level > 0) {
      properties.set(PROPERTY_REAL_TOPIC, topic.name);
      properties.set(PROPERTY_REAL_QUEUE_ID, String(queueId));
    }
    if (deliverMs !== undefined) {
      properties.set(PROPERTY_TIMER_DELIVER_MS, String(deliverMs));
      place = { topic: TIMER_TOPIC, queueId: 0 };
      deliverAt = () => deliverMs!;
    } else if (level > 0) {
      properties.set(PROPERTY_DELAY, String(level)); // RocketMQ's delay hook
      place = { topic: SCHEDULE_TOPIC, queueId: level - 1 };
      deliverAt = (stored) => stored + d.store.delayLevelsMs[level - 1];
    }
    const input: MessageInput = {
      topic: place.topic,
      queueId: place.queueId,
      body: message.body,
      properties,
      bornTimestamp: now,
      bornHost: LOOPBACK,
      storeHost: d.storeHost,
    };
    const result = (r: PutResult, replicas: number | undefined): ProduceResult => {
      const out: ProduceResult = {
        messageId,
        topic: topic.name,
        queueId,
        // A waiting message gets its real queue offset when it is delivered.
        queueOffset: deliverAt ? -1 : r.queueOffset,
        commitLogOffset: r.commitLogOffset,
        storeTimestamp: r.storeTimestamp,
        durability: r.durability,
      };
      if (replicas !== undefined) out.replicas = replicas;
      if (deliverAt) out.deliverAt = deliverAt(r.storeTimestamp);
      return out;
    };
    // One reaction per put: a store refusal becomes a BrokerError; the replication gate's
    // own errors pass through unchanged.
    const gate = d.replication;
    return d.store.putMessage(input).then(
      gate
        ? (r) => gate.confirm(r.commitLogOffset + r.size).then((replicas) => result(r, replicas))
        : (r) => result(r, undefined),
      rethrowStoreError,
    );
  }

  /** Explicit queue, else hash of the sharding key (SelectMessageQueueByHash), else round robin. */
  #selectQueue(topic: TopicConfig, queueId?: number, shardingKey?: string): number {
    const n = topic.writeQueueNums;
    if (queueId !== undefined) {
      if (!Number.isInteger(queueId) || queueId < 0 || queueId >= n) {
        throw new BrokerError(
          "QUEUE_NOT_FOUND",
          `Cannot write to queue ${queueId} of ${topic.name}: it has write queues 0-${n - 1}`,
        );
      }
      return queueId;
    }
    if (shardingKey !== undefined) return Math.abs(javaStringHashCode(shardingKey) % n);
    const next = ((this.#roundRobin.get(topic.name) ?? Math.floor(this.#d.random() * n)) + 1) &
      0x7fffffff;
    this.#roundRobin.set(topic.name, next);
    return next % n;
  }
}

function fingerprint(m: ProduceMessage): string {
  return JSON.stringify([
    crc32(m.body),
    m.body.length,
    m.tag,
    m.keys,
    m.shardingKey,
    m.queueId,
    m.properties,
    m.contentType,
  ]);
}
