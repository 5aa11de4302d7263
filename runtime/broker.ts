// The broker: one process owning one data folder. It composes the message store, the
// metadata database, consumer offsets, long polling and idempotency, and is the
// in-process BrokerClient the embedded functions call.
import type { BrokerClient } from "./protocol/core_api.ts";
import { crc32 } from "node:zlib";
import { MessageStore, type PutResult } from "../storage/message_store.ts";
import type { FilePort } from "../storage/file_port.ts";
import { javaStringHashCode, type MessageInput } from "../storage/message/record.ts";
import { type MetadataDbHandle, openMetadataDb } from "../storage/metadata/sqlite.ts";
import {
  type ConsumerGroupConfig,
  MetadataError,
  MetadataStore,
  PERM_READ,
  PERM_WRITE,
  type TopicConfig as StoredTopic,
} from "../storage/metadata/metadata_store.ts";
import { ConsumerOffsetStore } from "../storage/metadata/offset_store.ts";
import { PROPERTY_DELAY, SCHEDULE_TOPIC, tagsCodeOf } from "../storage/dispatch_request.ts";
import { PROPERTY_REAL_QID, PROPERTY_REAL_TOPIC, ScheduleService } from "./schedule_service.ts";
import type { BrokerConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import { BrokerError } from "./protocol/errors.ts";
import {
  checkGroup,
  checkReadableTopic,
  checkUserProperty,
  checkUserTopic,
} from "./protocol/names.ts";
import type {
  AckResult,
  AssignmentView,
  BatchItemResult,
  CronScheduleInput,
  CronScheduleView,
  DeliveryAttempt,
  FindQuery,
  GroupOffsets,
  GroupSettings,
  GroupView,
  HealthInfo,
  HeartbeatRequest,
  MembersView,
  PopMessage,
  ProduceMessage,
  ProduceResult,
  PullRequest,
  PullResult,
  QueueOffsetInfo,
  ReceiveOptions,
  ScheduledOutcome,
  ScheduledStats,
  SignalSource,
  SubscriptionInput,
  SubscriptionView,
  TopicConfig,
  TopicUpsert,
  WireMessage,
} from "./protocol/types.ts";
import { signalOf } from "./protocol/types.ts";
import { MESSAGE_ID_PATTERN, MessageIdGenerator } from "./message_id.ts";
import { PullHoldService } from "./long_polling.ts";
import { checkCron, CronService } from "./cron_service.ts";
import { PROPERTY_TIMER_DELIVER_MS, TIMER_TOPIC, TimerService } from "./timer_service.ts";
import { ConsumerMembership, MembershipError } from "./consumer/membership.ts";
import { AllocateArgumentError } from "./consumer/allocate.ts";
import {
  dlqTopicOf,
  PopService,
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_RETRY_TOPIC,
  REVIVE_TOPIC,
} from "./pop_service.ts";

/** Offsets-store group that keeps each DLQ's purge/redrive cursor. */
const DLQ_CURSOR_PREFIX = "%DLQCURSOR%";
export { parseTagExpression };
import { IdempotencyCache } from "./idempotency.ts";
import { type StoredSubscription, WebhookService } from "./webhook/delivery_service.ts";
import { normalizeSubscription, SubscriptionRepo } from "./webhook/subscriptions.ts";
import { createEgress, type WebhookEgress } from "./webhook/egress.ts";
import { encodeSnapshot, exportMetadata } from "./ha/metadata_sync.ts";
import {
  fromStoreError,
  parseTagExpression,
  PROPERTY_CONTENT_TYPE,
  PROPERTY_SHARDING_KEY,
  toWireMessage,
} from "./wire.ts";

/** What a replicated group's master asks of every client write (runtime/ha/node.ts). */
export interface ReplicationGate {
  /** Throws NOT_LEADER when this broker may not take writes now. */
  checkWritable(): void;
  /**
   * Resolves, once the replication policy holds for the log below `endOffset`, with how
   * many replicas hold it (this one included). Rejects with a BrokerError otherwise
   * (REPLICATION_TIMEOUT, REPLICAS_NOT_AVAILABLE, NOT_LEADER): never a success that
   * promises more than happened.
   */
  confirm(endOffset: number): Promise<number>;
}

export interface BrokerDeps {
  /** A store already open and started (a slave's, promoted): used as is. Default: the
   * broker opens one on config.store. */
  store?: MessageStore;
  /** Set for a master of a replicated group; absent for a broker on its own. */
  replication?: ReplicationGate;
  config: BrokerConfig;
  files: FilePort;
  nowMs: () => number;
  log: Logger;
  runtime: string;
  pid: number;
  random: () => number;
  /** Percent of the data disk in use; drives retention and the disk-full guard. */
  diskUsedRatio?: () => number;
}

const LOOPBACK = { ip: new Uint8Array([127, 0, 0, 1]), port: 0 };

export class Broker implements BrokerClient {
  readonly store: MessageStore;
  readonly holds: PullHoldService;
  schedule: ScheduleService | undefined;
  #cron: CronService | undefined;
  timers: TimerService | undefined;
  pop: PopService | undefined;
  webhooks: WebhookService | undefined;
  #egress: WebhookEgress | undefined;
  #subscriptions: SubscriptionRepo | undefined;
  readonly membership: ConsumerMembership;
  #expireTimer: ReturnType<typeof setInterval> | undefined;
  #groupConfigs = new Map<string, ConsumerGroupConfig>();
  #metadataHandle: MetadataDbHandle | undefined;
  #metadata: MetadataStore | undefined;
  #offsets: ConsumerOffsetStore | undefined;
  #topics = new Map<string, TopicConfig>();
  #roundRobin = new Map<string, number>();
  #idempotency: IdempotencyCache<ProduceResult>;
  #ids: MessageIdGenerator;
  #storeHost: { ip: Uint8Array; port: number };
  #closing = false;
  #closed = false;
  readonly config: BrokerConfig;

  constructor(private readonly deps: BrokerDeps) {
    this.config = deps.config;
    this.store = deps.store ?? new MessageStore({
      files: deps.files,
      config: deps.config.store,
      nowMs: deps.nowMs,
      log: deps.log,
      diskUsedRatio: deps.diskUsedRatio,
    });
    this.holds = new PullHoldService({ holdsMax: deps.config.heldPullsMax });
    this.membership = new ConsumerMembership({
      nowMs: deps.nowMs,
      memberTimeoutMs: deps.config.consumerTimeoutMs,
    });
    this.store.onArrival((topic, queueId, maxOffset) => {
      if (topic === SCHEDULE_TOPIC) this.schedule?.arriving(queueId);
      else if (topic === TIMER_TOPIC) this.timers?.arriving();
      else if (topic === REVIVE_TOPIC) this.pop?.arriving();
      else {
        this.holds.arriving(topic, queueId, maxOffset);
        this.webhooks?.arriving(topic, queueId);
      }
    });
    this.#idempotency = new IdempotencyCache({
      windowMs: deps.config.idempotencyWindowMs,
      keysMax: deps.config.idempotencyKeysMax,
      nowMs: deps.nowMs,
    });
    this.#storeHost = { ...LOOPBACK, port: deps.config.port };
    this.#ids = new MessageIdGenerator({
      ip: LOOPBACK.ip,
      pid: deps.pid,
      nowMs: deps.nowMs,
      random: deps.random,
    });
  }

  async start(): Promise<void> {
    const { config, files, log } = this.deps;
    files.mkdirp(config.dataDir);
    if (!this.deps.store) {
      const started = this.deps.nowMs();
      const report = await this.store.open();
      log("info", "store recovered", { ...report, ms: this.deps.nowMs() - started });
      this.store.start();
    }
    this.schedule = new ScheduleService(this.store, {
      files,
      dataDir: config.dataDir,
      nowMs: this.deps.nowMs,
      log,
      storeHost: this.#storeHost,
      flushDelayOffsetIntervalMs: config.flushDelayOffsetIntervalMs,
    });
    this.schedule.start();
    this.timers = new TimerService(this.store, {
      files,
      dataDir: config.dataDir,
      nowMs: this.deps.nowMs,
      log,
      storeHost: this.#storeHost,
      timer: {
        precisionMs: config.timerPrecisionMs,
        horizonMs: config.timerHorizonMs + config.timerPrecisionMs,
      },
      timerRollWindowMs: config.timerRollWindowMs,
      timerCheckpointIntervalMs: config.timerCheckpointIntervalMs,
    });
    await this.timers.start();
    this.#metadataHandle = await openMetadataDb(`${config.dataDir}/metadata.sqlite`);
    this.#metadata = new MetadataStore(this.#metadataHandle.db, { nowMs: this.deps.nowMs });
    this.#offsets = await ConsumerOffsetStore.open(this.#metadataHandle.db, {
      nowMs: this.deps.nowMs,
    });
    this.#offsets.start({
      intervalMs: config.offsetPersistIntervalMs,
      onPersistError: (err) =>
        log("error", "persisting consumer offsets failed", { err: String(err) }),
    });
    for (const t of await this.#metadata.listTopics()) this.#topics.set(t.topicName, toTopic(t));
    for (const g of await this.#metadata.listConsumerGroups()) {
      this.#groupConfigs.set(g.groupName, g);
    }
    this.#cron = new CronService({
      db: this.#metadataHandle.db,
      produce: (topic, message) => this.produce(topic, message),
      nowMs: this.deps.nowMs,
      log,
      schedulesMax: config.cronSchedulesMax,
      newId: () => crypto.randomUUID(),
    });
    await this.#cron.start();
    const offsets = this.#offsets;
    this.pop = new PopService({
      store: this.store,
      timers: this.timers,
      holds: this.holds,
      nowMs: this.deps.nowMs,
      log,
      newId: () => this.#ids.next(),
      storeHost: this.#storeHost,
      offsets: {
        query: (g, t, q) => offsets.query(g, t, q),
        commit: (g, t, q, o) => offsets.commit(g, t, q, o),
      },
      groupOf: (group) => this.#groupConfigs.get(group),
      delayLevelsMs: this.store.delayLevelsMs,
    });
    this.pop.arriving(); // CKs that fired while the broker was down
    const pop = this.pop;
    this.#egress = createEgress(config, log);
    this.#subscriptions = new SubscriptionRepo(this.#metadataHandle.db);
    this.webhooks = new WebhookService({
      store: this.store,
      offsets: {
        query: (g, t, q) => offsets.query(g, t, q),
        commit: (g, t, q, o) => offsets.commit(g, t, q, o),
      },
      transport: this.#egress.transport,
      nowMs: this.deps.nowMs,
      log,
      storeHost: this.#storeHost,
      settings: config,
      readQueueNums: (topic) => this.#topics.get(topic)?.readQueueNums,
      retryPolicy: (group) => {
        const g = this.#groupConfigs.get(group);
        return {
          retryMaxTimes: g?.retryMaxTimes ?? 16,
          backoffList: g?.retryBackoffMs ? [...g.retryBackoffMs] : null,
          backoffMs: (n) => pop.backoffMs(group, n),
        };
      },
      parseTags: (expression) => parseTagExpression(expression),
      saveStatus: (group, status, reason) =>
        this.#subscriptions!.saveStatus(group, status, reason, this.deps.nowMs()),
    });
    this.webhooks.start(await this.#subscriptions.load());
    // The NameServer-style scan: silent consumers go after consumerTimeoutMs.
    this.#expireTimer = setInterval(() => this.membership.expire(this.deps.nowMs()), 5000);
    (this.#expireTimer as { unref?: () => void }).unref?.();
  }

  /** Every replicated metadata table (topics, groups, offsets, subscriptions, schedules),
   * for the group's slaves (runtime/ha/metadata_sync.ts). */
  async metadataSnapshot(): Promise<Uint8Array> {
    if (!this.#metadataHandle || this.#closed) {
      throw new BrokerError(
        "BROKER_UNAVAILABLE",
        "Cannot export metadata: the broker is not running",
      );
    }
    return encodeSnapshot(
      await exportMetadata(this.#metadataHandle.db, {
        offsets: this.#offsets,
        nowMs: this.deps.nowMs,
      }),
    );
  }

  /** First step of a graceful stop: answer held pulls now and refuse new writes. */
  drain(): void {
    this.#closing = true;
    this.holds.close();
  }

  /** Graceful stop: answer held pulls, stop taking writes, flush, persist offsets. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#cron?.stop();
    clearInterval(this.#expireTimer);
    this.drain();
    await this.webhooks?.close().catch((err) =>
      this.deps.log("error", "stopping webhook deliveries failed", { err: String(err) })
    );
    await this.#egress?.close().catch((err) =>
      this.deps.log("error", "closing webhook connections failed", { err: String(err) })
    );
    await this.timers?.stop().catch((err) =>
      this.deps.log("error", "stopping timers failed", { err: String(err) })
    );
    await this.schedule?.stop().catch((err) =>
      this.deps.log("error", "persisting delay offsets failed", { err: String(err) })
    );
    await this.#offsets?.stop().catch((err) =>
      this.deps.log("error", "final offset persist failed", { err: String(err) })
    );
    await this.store.close();
    this.#metadataHandle?.close();
  }

  get topicNames(): string[] {
    return [...this.#topics.keys()];
  }
  topicConfigs(): TopicConfig[] {
    return [...this.#topics.values()];
  }

  // ---- produce ----

  produce(topic: string, message: ProduceMessage): Promise<ProduceResult> {
    // A plain produce to an existing topic settles with the store's put and builds no
    // async frame; a refusal is a rejection, as from an async function.
    try {
      const config = this.#writableTopic(topic);
      if (!(config instanceof Promise) && !message.idempotencyKey) {
        return this.#putOne(config, message);
      }
      return this.#produceAwaiting(topic, config, message);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async #produceAwaiting(
    topic: string,
    writable: TopicConfig | Promise<TopicConfig>,
    message: ProduceMessage,
  ): Promise<ProduceResult> {
    const config = await writable;
    if (!message.idempotencyKey) return this.#putOne(config, message);
    const [result, replay] = await this.#idempotency.run(
      `${topic}\u0000${message.idempotencyKey}`,
      fingerprint(message),
      () => this.#putOne(config, message),
    );
    return replay ? { ...result, idempotentReplay: true } : result;
  }

  async produceBatch(topic: string, messages: ProduceMessage[]): Promise<BatchItemResult[]> {
    const config = await this.#writableTopic(topic);
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
    return settled.map((s, index): BatchItemResult => {
      if (s.status === "fulfilled") return { ok: true, ...s.value };
      const err = asBrokerError(s.reason);
      return {
        ok: false,
        index,
        error: { type: err.type, status: err.status, detail: err.message, code: err.code },
      };
    });
  }

  #putOne(topic: TopicConfig, message: ProduceMessage): Promise<ProduceResult> {
    const now = this.deps.nowMs();
    let deliverMs: number | undefined;
    if (message.delayMs !== undefined || message.deliverAt !== undefined) {
      if (
        message.delayLevel !== undefined ||
        (message.delayMs !== undefined && message.deliverAt !== undefined)
      ) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          "Cannot combine Mq-Delay-Level, Mq-Delay-Ms and Mq-Deliver-At: use one",
        );
      }
      deliverMs = message.deliverAt ?? now + message.delayMs!;
      if (deliverMs - now > this.config.timerHorizonMs) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          `Cannot schedule ${
            deliverMs - now
          } ms ahead: the timer horizon is ${this.config.timerHorizonMs} ms (timerHorizonMs)`,
          { horizonMs: this.config.timerHorizonMs },
        );
      }
      if (deliverMs <= now) deliverMs = undefined; // due already: deliver at once
    }
    const levels = this.store.delayLevelsMs.length;
    const level = message.delayLevel ?? 0;
    if (!Number.isInteger(level) || level < 0 || level > levels) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot use delay level ${level}: levels are 1-${levels} (${this.config.store.messageDelayLevel}), 0 for none`,
      );
    }
    const queueId = this.#selectQueue(topic, message);
    const messageId = this.#ids.next();
    const properties = new Map<string, string>();
    const user = message.properties;
    if (user !== undefined) {
      for (const [k, v] of Object.entries(user)) {
        checkUserProperty(k, v);
        properties.set(k, v);
      }
    }
    if (properties.size > this.config.userPropertiesMax) {
      throw new BrokerError(
        "INVALID_PROPERTY",
        `Cannot set ${properties.size} properties; userPropertiesMax is ${this.config.userPropertiesMax}`,
      );
    }
    if (message.tag !== undefined) properties.set("TAGS", message.tag);
    if (message.keys?.length) properties.set("KEYS", message.keys.join(" "));
    properties.set("UNIQ_KEY", messageId);
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
      properties.set(PROPERTY_REAL_QID, String(queueId));
    }
    if (deliverMs !== undefined) {
      properties.set(PROPERTY_TIMER_DELIVER_MS, String(deliverMs));
      place = { topic: TIMER_TOPIC, queueId: 0 };
      deliverAt = () => deliverMs!;
    } else if (level > 0) {
      properties.set(PROPERTY_DELAY, String(level)); // RocketMQ's delay hook
      place = { topic: SCHEDULE_TOPIC, queueId: level - 1 };
      deliverAt = (stored) => stored + this.store.delayLevelsMs[level - 1];
    }
    const input: MessageInput = {
      topic: place.topic,
      queueId: place.queueId,
      body: message.body,
      properties,
      bornTimestamp: now,
      bornHost: LOOPBACK,
      storeHost: this.#storeHost,
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
    const gate = this.deps.replication;
    return this.store.putMessage(input).then(
      gate
        ? (r) => gate.confirm(r.commitLogOffset + r.size).then((replicas) => result(r, replicas))
        : (r) => result(r, undefined),
      rethrowStoreError,
    );
  }

  /** Explicit queue, else hash of the sharding key (SelectMessageQueueByHash), else round robin. */
  #selectQueue(topic: TopicConfig, message: ProduceMessage): number {
    const n = topic.writeQueueNums;
    if (message.queueId !== undefined) {
      if (!Number.isInteger(message.queueId) || message.queueId < 0 || message.queueId >= n) {
        throw new BrokerError(
          "QUEUE_NOT_FOUND",
          `Cannot write to queue ${message.queueId} of ${topic.name}: it has write queues 0-${
            n - 1
          }`,
        );
      }
      return message.queueId;
    }
    if (message.shardingKey !== undefined) {
      return Math.abs(javaStringHashCode(message.shardingKey) % n);
    }
    const next = ((this.#roundRobin.get(topic.name) ?? Math.floor(this.deps.random() * n)) + 1) &
      0x7fffffff;
    this.#roundRobin.set(topic.name, next);
    return next % n;
  }

  /** The topic when it exists (no await on the produce path), else a promise of its creation. */
  #writableTopic(name: string): TopicConfig | Promise<TopicConfig> {
    if (this.#closing) {
      throw new BrokerError(
        "STORE_NOT_WRITABLE",
        "Cannot accept writes as the broker is shutting down",
      );
    }
    this.deps.replication?.checkWritable();
    checkUserTopic(name);
    const topic = this.#topics.get(name);
    if (!topic) {
      if (!this.config.autoCreateTopicEnable) {
        throw new BrokerError(
          "TOPIC_NOT_FOUND",
          `Cannot produce to ${name} as it does not exist and autoCreateTopicEnable is off`,
        );
      }
      return this.upsertTopic(name, {}).then(writable);
    }
    return writable(topic);
  }

  #readableTopic(name: string, queueId: number): TopicConfig {
    checkReadableTopic(name);
    const topic = this.#topics.get(name);
    if (!topic) throw new BrokerError("TOPIC_NOT_FOUND", `No topic ${name}`);
    if (!(topic.perm & PERM_READ)) {
      throw new BrokerError(
        "TOPIC_PERMISSION_DENIED",
        `Cannot read ${name} as its perm ${topic.perm} lacks READ (4)`,
      );
    }
    if (!Number.isInteger(queueId) || queueId < 0 || queueId >= topic.readQueueNums) {
      throw new BrokerError(
        "QUEUE_NOT_FOUND",
        `No queue ${queueId} in ${name}: it has read queues 0-${topic.readQueueNums - 1}`,
      );
    }
    return topic;
  }

  // ---- pull ----

  async pull(
    topicName: string,
    queueId: number,
    request: PullRequest,
    signalSource?: SignalSource,
  ): Promise<PullResult> {
    this.#readableTopic(topicName, queueId);
    if (request.group !== undefined) await this.#existingGroup(request.group);
    const max = Math.min(request.max ?? this.config.pullMsgNumsDefault, this.config.pullMsgNumsMax);
    const waitMs = Math.min(request.waitMs ?? 0, this.config.pullWaitMsMax);
    const tags = parseTagExpression(request.tags);
    const tagCodes = tags ? new Set([...tags].map(tagsCodeOf)) : undefined;
    const deadline = this.deps.nowMs() + waitMs;
    let offset = request.offset;
    let signal: AbortSignal | undefined; // read only once the pull has to wait
    for (;;) {
      const got = this.store.getMessage(topicName, queueId, offset, {
        maxMsgNums: max,
        maxBytes: this.config.pullBytesMax,
        filter: tags ? { tags } : undefined,
      });
      const range = { minOffset: got.minOffset, maxOffset: got.maxOffset };
      if (got.status === "OFFSET_TOO_SMALL" || got.status === "OFFSET_OVERFLOW_BADLY") {
        throw new BrokerError(
          "OFFSET_OUT_OF_RANGE",
          `Cannot pull ${topicName}:${queueId} at offset ${offset}: valid offsets are ${range.minOffset} to ${range.maxOffset}`,
          range,
        );
      }
      if (got.status === "FOUND") {
        return this.#answer(
          request,
          topicName,
          queueId,
          "FOUND",
          got.messages.map((m) => toWireMessage(m.record, m.queueOffset)),
          got.nextBeginOffset,
          range,
        );
      }
      if (got.status === "NO_MATCHED_MESSAGE" || got.status === "OFFSET_FOUND_NULL") {
        offset = Math.max(offset, got.nextBeginOffset);
      }
      if (offset < got.maxOffset && got.status === "NO_MATCHED_MESSAGE") continue; // keep scanning
      const left = deadline - this.deps.nowMs();
      if (left > 0) signal ??= signalOf(signalSource);
      if (left <= 0 || this.#closing || signal?.aborted) {
        const status = offset > request.offset ? "NO_MATCHED_MESSAGE" : "NO_NEW_MESSAGE";
        return this.#answer(
          request,
          topicName,
          queueId,
          status,
          [],
          Math.max(offset, got.nextBeginOffset),
          range,
        );
      }
      if (!this.holds.canHold()) {
        throw new BrokerError(
          "TOO_MANY_WAITING",
          `Cannot hold another pull: heldPullsMax ${this.config.heldPullsMax} reached; retry shortly`,
        );
      }
      await this.holds.hold(topicName, queueId, offset, left, tagCodes, signal);
    }
  }

  #answer(
    request: PullRequest,
    topic: string,
    queueId: number,
    status: PullResult["status"],
    messages: WireMessage[],
    nextOffset: number,
    range: { minOffset: number; maxOffset: number },
  ): PullResult {
    if (request.group !== undefined) {
      this.#offsets!.commit(request.group, topic, queueId, nextOffset);
    }
    return { status, messages, nextOffset, ...range };
  }

  // ---- topics ----

  async upsertTopic(name: string, update: TopicUpsert): Promise<TopicConfig> {
    checkUserTopic(name);
    const current = this.#topics.get(name);
    const queues = this.config.defaultTopicQueueNums;
    const next = {
      topicName: name,
      readQueueNums: update.readQueueNums ?? current?.readQueueNums ?? queues,
      writeQueueNums: update.writeQueueNums ?? current?.writeQueueNums ?? queues,
      perm: update.perm ?? current?.perm ?? (PERM_READ | PERM_WRITE),
      order: update.order ?? current?.order ?? false,
    };
    for (
      const [k, v] of [["readQueueNums", next.readQueueNums], [
        "writeQueueNums",
        next.writeQueueNums,
      ]] as const
    ) {
      if (!Number.isInteger(v) || v < 1 || v > this.config.topicQueueNumsMax) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          `Cannot set ${k} to ${v}: it must be 1-${this.config.topicQueueNumsMax} (topicQueueNumsMax)`,
        );
      }
    }
    try {
      const stored = toTopic(await this.#metadata!.upsertTopic(next));
      this.#topics.set(name, stored);
      return stored;
    } catch (err) {
      if (err instanceof MetadataError) {
        throw new BrokerError("INVALID_PARAMETER", err.message, {}, { cause: err });
      }
      throw err;
    }
  }

  getTopic(name: string): Promise<TopicConfig> {
    checkReadableTopic(name);
    const topic = this.#topics.get(name);
    if (!topic) return Promise.reject(new BrokerError("TOPIC_NOT_FOUND", `No topic ${name}`));
    return Promise.resolve(topic);
  }

  listTopics(): Promise<TopicConfig[]> {
    return Promise.resolve([...this.#topics.values()].sort((a, b) => a.name.localeCompare(b.name)));
  }

  async deleteTopic(name: string): Promise<void> {
    await this.getTopic(name);
    await this.#metadata!.deleteTopic(name);
    this.#topics.delete(name);
    this.#offsets!.removeTopic(name);
    this.store.deleteTopic(name);
  }

  // ---- groups and offsets ----

  /**
   * Creates a consumer group, or replaces its settings (PUT semantics: a setting left out
   * takes its default). With no settings an existing group is left as it is.
   */
  async upsertGroup(group: string, settings: GroupSettings = {}): Promise<GroupView> {
    checkGroup(group);
    const current = this.#groupConfigs.get(group);
    if (current && Object.keys(settings).length === 0) return toGroupView(current);
    try {
      const stored = await this.#metadata!.upsertConsumerGroup({ groupName: group, ...settings });
      this.#groupConfigs.set(group, stored);
      return toGroupView(stored);
    } catch (err) {
      if (err instanceof MetadataError) {
        throw new BrokerError("INVALID_PARAMETER", err.message, {}, { cause: err });
      }
      throw err;
    }
  }

  getGroup(group: string): Promise<GroupView> {
    checkGroup(group);
    const config = this.#groupConfigs.get(group);
    if (!config) {
      return Promise.reject(new BrokerError("GROUP_NOT_FOUND", `No consumer group ${group}`));
    }
    return Promise.resolve(toGroupView(config));
  }

  #existingGroup(group: string): Promise<void> {
    checkGroup(group);
    if (!this.#groupConfigs.has(group)) {
      return Promise.reject(
        new BrokerError(
          "GROUP_NOT_FOUND",
          `No consumer group ${group}; create it with PUT /v1/groups/${group}`,
        ),
      );
    }
    return Promise.resolve();
  }

  async commitOffset(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<QueueOffsetInfo> {
    await this.#existingGroup(group);
    this.#readableTopic(topic, queueId);
    const max = this.store.getMaxOffsetInQueue(topic, queueId);
    const min = this.store.getMinOffsetInQueue(topic, queueId);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > max) {
      throw new BrokerError(
        "OFFSET_OUT_OF_RANGE",
        `Cannot commit offset ${offset} for ${topic}:${queueId}: valid offsets are 0 to ${max}`,
        { minOffset: min, maxOffset: max },
      );
    }
    this.#offsets!.commit(group, topic, queueId, offset);
    return this.#offsetInfo(group, topic, queueId);
  }

  async getOffset(group: string, topic: string, queueId: number): Promise<QueueOffsetInfo> {
    await this.#existingGroup(group);
    this.#readableTopic(topic, queueId);
    return this.#offsetInfo(group, topic, queueId);
  }

  async getOffsets(group: string, topic: string): Promise<GroupOffsets> {
    await this.#existingGroup(group);
    const config = this.#readableTopic(topic, 0);
    const queues = [...Array(config.readQueueNums).keys()].map((q) =>
      this.#offsetInfo(group, topic, q)
    );
    return { group, topic, queues, totalLag: queues.reduce((s, q) => s + q.lag, 0) };
  }

  async resetOffsetsByTime(group: string, topic: string, timestamp: number): Promise<GroupOffsets> {
    await this.#existingGroup(group);
    const config = this.#readableTopic(topic, 0);
    for (let q = 0; q < config.readQueueNums; q++) {
      this.#offsets!.commit(
        group,
        topic,
        q,
        this.store.getOffsetInQueueByTime(topic, q, timestamp),
      );
    }
    return this.getOffsets(group, topic);
  }

  #offsetInfo(group: string, topic: string, queueId: number): QueueOffsetInfo {
    const min = this.store.getMinOffsetInQueue(topic, queueId);
    const max = this.store.getMaxOffsetInQueue(topic, queueId);
    const stored = this.#offsets!.query(group, topic, queueId);
    const from = stored === undefined ? max : Math.max(stored, min);
    return {
      queueId,
      offset: stored ?? -1,
      minOffset: min,
      maxOffset: max,
      lag: stored === undefined ? 0 : Math.max(0, max - from),
    };
  }

  // ---- find ----

  getMessageById(messageId: string, topic?: string): Promise<WireMessage> {
    if (!MESSAGE_ID_PATTERN.test(messageId)) {
      return Promise.reject(
        new BrokerError(
          "INVALID_PARAMETER",
          `Cannot look up message id ${
            JSON.stringify(messageId.slice(0, 64))
          }: ids are 32 upper-case hex characters`,
        ),
      );
    }
    const topics = topic ? [checkReadableTopic(topic)] : [...this.#topics.keys()];
    for (const t of topics) {
      for (
        const record of this.store.queryMessage(t, messageId, {
          maxNum: 1,
          beginTimestamp: 0,
          endTimestamp: Number.MAX_SAFE_INTEGER,
        })
      ) {
        if (record.properties.get("UNIQ_KEY") === messageId) {
          return Promise.resolve(toWireMessage(record, record.queueOffset));
        }
      }
    }
    return Promise.reject(new BrokerError("MESSAGE_NOT_FOUND", `No message with id ${messageId}`));
  }

  findMessages(topic: string, query: FindQuery): Promise<WireMessage[]> {
    checkReadableTopic(topic);
    const config = this.#topics.get(topic);
    if (!config) return Promise.reject(new BrokerError("TOPIC_NOT_FOUND", `No topic ${topic}`));
    const maxNum = Math.min(query.maxNum ?? 32, 64);
    const begin = query.beginTimestamp ?? 0;
    const end = query.endTimestamp ?? Number.MAX_SAFE_INTEGER;
    if (query.key !== undefined) {
      const records = this.store.queryMessage(topic, query.key, {
        maxNum,
        beginTimestamp: begin,
        endTimestamp: end,
      });
      return Promise.resolve(records.map((r) => toWireMessage(r, r.queueOffset)));
    }
    const out: WireMessage[] = [];
    for (let q = 0; q < config.readQueueNums && out.length < maxNum; q++) {
      let offset = this.store.getOffsetInQueueByTime(topic, q, begin);
      const got = this.store.getMessage(topic, q, offset, {
        maxMsgNums: maxNum - out.length,
        maxBytes: this.config.pullBytesMax,
      });
      for (const m of got.messages) {
        if (m.record.storeTimestamp > end) break;
        out.push(toWireMessage(m.record, m.queueOffset));
        offset++;
      }
    }
    return Promise.resolve(out);
  }

  // ---- POP consumption ----

  async receive(
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]> {
    await this.#existingGroup(group);
    const topic = this.#readableTopic(options.topic, 0);
    const c = this.config;
    const max = options.max ?? c.popMsgNumsMax;
    const invisibleMs = options.invisibleMs ?? c.popInvisibleMsDefault;
    const waitMs = Math.min(options.waitMs ?? 0, c.pullWaitMsMax);
    if (!Number.isInteger(max) || max < 1 || max > c.popMsgNumsMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot receive ${max} messages: 1-${c.popMsgNumsMax} (popMsgNumsMax)`,
      );
    }
    this.#checkInvisible(invisibleMs);
    if (
      options.clientId !== undefined &&
      (typeof options.clientId !== "string" || !/^[\x21-\x7e]{1,255}$/.test(options.clientId))
    ) {
      throw new BrokerError("INVALID_PARAMETER", "clientId must be 1-255 visible ASCII characters");
    }
    return this.pop!.receive({
      group,
      clientId: options.clientId,
      topic: topic.name,
      readQueueNums: topic.readQueueNums,
      max,
      invisibleMs,
      waitMs,
      signal,
    }).catch((err) => {
      throw fromStoreError(err);
    });
  }

  async ack(group: string, receiptHandle: string): Promise<void> {
    await this.#existingGroup(group);
    await this.pop!.ack(group, receiptHandle);
  }

  /** Acks many handles at once; each succeeds or fails alone (their markers share a write). */
  async ackBatch(group: string, receiptHandles: string[]): Promise<AckResult[]> {
    await this.#existingGroup(group);
    const settled = await Promise.allSettled(receiptHandles.map((h) => this.pop!.ack(group, h)));
    return settled.map((s, i) => {
      if (s.status === "fulfilled") return { receiptHandle: receiptHandles[i], ok: true };
      const err = asBrokerError(s.reason);
      return {
        receiptHandle: receiptHandles[i],
        ok: false,
        error: { type: err.type, status: err.status, detail: err.message, code: err.code },
      };
    });
  }

  async nack(group: string, receiptHandle: string, delayMs?: number): Promise<void> {
    await this.#existingGroup(group);
    if (
      delayMs !== undefined &&
      (!Number.isSafeInteger(delayMs) || delayMs < 0 || delayMs > this.config.popInvisibleMsMax)
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot nack with delayMs ${delayMs}: 0-${this.config.popInvisibleMsMax}`,
      );
    }
    await this.pop!.nack(group, receiptHandle, delayMs);
  }

  async changeInvisibleTime(
    group: string,
    receiptHandle: string,
    invisibleMs: number,
  ): Promise<{ invisibleUntil: number }> {
    await this.#existingGroup(group);
    this.#checkInvisible(invisibleMs);
    return {
      invisibleUntil: await this.pop!.changeInvisibleTime(group, receiptHandle, invisibleMs),
    };
  }

  // ---- long-lived consumers: membership, assignment, ordered locks ----

  async heartbeat(group: string, data: HeartbeatRequest): Promise<MembersView> {
    await this.#existingGroup(group);
    for (const s of data.subscriptions ?? []) this.#readableTopic(s.topic, 0);
    this.#membership(() => this.membership.heartbeat(group, data));
    return this.members(group);
  }

  async unregister(group: string, clientId: string): Promise<MembersView> {
    await this.#existingGroup(group);
    this.membership.unregister(group, clientId);
    return this.members(group);
  }

  members(group: string): MembersView {
    return {
      group,
      generation: this.membership.generation(group),
      members: this.membership.members(group),
    };
  }

  /** The queues of `topic` that `clientId` should consume now, by the group's strategy. */
  async assignment(group: string, clientId: string, topic: string): Promise<AssignmentView> {
    await this.#existingGroup(group);
    const config = this.#readableTopic(topic, 0);
    const queues = [...Array(config.readQueueNums).keys()].map((queueId) => ({
      brokerName: this.config.brokerName,
      queueId,
    }));
    const mine = this.#membership(() => this.membership.assignment(group, clientId, topic, queues));
    return {
      group,
      clientId,
      topic,
      generation: this.membership.generation(group),
      queueIds: mine.map((q) => q.queueId),
    };
  }

  /** Ordered consumption: the queues `clientId` now holds (free, its own, or expired locks). */
  async lockQueues(
    group: string,
    clientId: string,
    topic: string,
    queueIds: number[],
    unlock = false,
  ): Promise<number[]> {
    await this.#existingGroup(group);
    this.#readableTopic(topic, 0);
    if (unlock) {
      this.#membership(() => this.membership.unlock(group, clientId, topic, queueIds));
      return [];
    }
    return this.#membership(() =>
      this.membership.lock(group, clientId, topic, queueIds, this.deps.nowMs())
    );
  }

  #membership<T>(f: () => T): T {
    try {
      return f();
    } catch (err) {
      if (err instanceof MembershipError || err instanceof AllocateArgumentError) {
        throw new BrokerError("INVALID_PARAMETER", (err as Error).message, {}, { cause: err });
      }
      throw err;
    }
  }

  // ---- dead letters ----

  /** Messages in %DLQ%{group} from the purge cursor (or `offset`), original topic shown. */
  async listDlq(
    group: string,
    options: { offset?: number; max?: number } = {},
  ): Promise<PullResult> {
    await this.#existingGroup(group);
    const dlq = dlqTopicOf(group);
    const cursor = this.#offsets!.query(DLQ_CURSOR_PREFIX + group, dlq, 0) ?? 0;
    const max = Math.min(options.max ?? this.config.pullMsgNumsDefault, this.config.pullMsgNumsMax);
    const from = Math.max(options.offset ?? cursor, cursor, this.store.getMinOffsetInQueue(dlq, 0));
    const got = this.store.getMessage(dlq, 0, from, {
      maxMsgNums: max,
      maxBytes: this.config.pullBytesMax,
    });
    const maxOffset = this.store.getMaxOffsetInQueue(dlq, 0);
    const messages = got.messages.map((m) => {
      const wire = toWireMessage(m.record, m.queueOffset);
      return { ...wire, topic: m.record.properties.get(PROPERTY_DLQ_ORIGIN_TOPIC) ?? wire.topic };
    });
    return {
      status: messages.length ? "FOUND" : "NO_NEW_MESSAGE",
      messages,
      nextOffset: Math.max(from, got.nextBeginOffset),
      minOffset: Math.max(cursor, got.minOffset),
      maxOffset,
    };
  }

  /**
   * Puts dead letters back on their original topic with reconsumeTimes 0 (same id, body and
   * properties): the listed ones, or all from the cursor, which then moves past them.
   */
  async redriveDlq(group: string, messageIds?: string[]): Promise<{ redriven: number }> {
    await this.#existingGroup(group);
    const dlq = dlqTopicOf(group);
    const cursor = this.#offsets!.query(DLQ_CURSOR_PREFIX + group, dlq, 0) ?? 0;
    const end = this.store.getMaxOffsetInQueue(dlq, 0);
    const wanted = messageIds ? new Set(messageIds) : undefined;
    const puts: Promise<unknown>[] = [];
    for (let offset = Math.max(cursor, this.store.getMinOffsetInQueue(dlq, 0)); offset < end;) {
      const got = this.store.getMessage(dlq, 0, offset, {
        maxMsgNums: 256,
        maxBytes: 16 * 1024 * 1024,
      });
      if (got.messages.length === 0) break;
      for (const m of got.messages) {
        const props = new Map(m.record.properties);
        if (wanted && !wanted.has(props.get("UNIQ_KEY") ?? "")) continue;
        const origin = props.get(PROPERTY_DLQ_ORIGIN_TOPIC) ?? props.get(PROPERTY_RETRY_TOPIC);
        const topic = origin ? this.#topics.get(origin) : undefined;
        if (!topic) continue; // the original topic is gone: the letter stays
        for (const p of [PROPERTY_DLQ_ORIGIN_TOPIC, PROPERTY_RETRY_TOPIC]) props.delete(p);
        puts.push(this.store.putMessage({
          topic: topic.name,
          queueId: this.#selectQueue(topic, {} as ProduceMessage),
          body: m.record.body,
          flag: m.record.flag,
          properties: props,
          bornTimestamp: m.record.bornTimestamp,
          bornHost: m.record.bornHost,
          storeHost: this.#storeHost,
          reconsumeTimes: 0,
        }));
      }
      offset = got.nextBeginOffset;
    }
    await Promise.all(puts).catch((err) => {
      throw fromStoreError(err);
    });
    if (!wanted) this.#offsets!.commit(DLQ_CURSOR_PREFIX + group, dlq, 0, end);
    return { redriven: puts.length };
  }

  /** Forgets every dead letter of the group (they age out of the CommitLog). */
  async purgeDlq(group: string): Promise<{ purged: number }> {
    await this.#existingGroup(group);
    const dlq = dlqTopicOf(group);
    const cursor = this.#offsets!.query(DLQ_CURSOR_PREFIX + group, dlq, 0) ?? 0;
    const end = this.store.getMaxOffsetInQueue(dlq, 0);
    this.#offsets!.commit(DLQ_CURSOR_PREFIX + group, dlq, 0, end);
    return { purged: Math.max(0, end - Math.max(cursor, this.store.getMinOffsetInQueue(dlq, 0))) };
  }

  #checkInvisible(invisibleMs: number) {
    const c = this.config;
    if (
      !Number.isSafeInteger(invisibleMs) || invisibleMs < c.popInvisibleMsMin ||
      invisibleMs > c.popInvisibleMsMax
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot use invisibleMs ${invisibleMs}: ${c.popInvisibleMsMin}-${c.popInvisibleMsMax}`,
      );
    }
  }

  // ---- scheduled messages ----

  /** Cancels a message scheduled with Mq-Delay-Ms / Mq-Deliver-At before it is delivered. */
  async cancelScheduled(topic: string, messageId: string): Promise<ScheduledOutcome> {
    checkReadableTopic(topic);
    if (!MESSAGE_ID_PATTERN.test(messageId)) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot look up message id ${JSON.stringify(messageId.slice(0, 64))}`,
      );
    }
    const outcome = await this.timers!.cancel(messageId, topic).catch((err) => {
      throw fromStoreError(err);
    });
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "ALREADY_DELIVERED",
        `Cannot cancel ${messageId}: it has already been delivered`,
      );
    }
    return { messageId, status: outcome };
  }

  /** Moves a scheduled message to a new delivery time. */
  async rescheduleScheduled(
    topic: string,
    messageId: string,
    deliverAt: number,
  ): Promise<ScheduledOutcome> {
    checkReadableTopic(topic);
    if (!MESSAGE_ID_PATTERN.test(messageId)) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot look up message id ${JSON.stringify(messageId.slice(0, 64))}`,
      );
    }
    const now = this.deps.nowMs();
    if (
      !Number.isSafeInteger(deliverAt) || deliverAt < 0 ||
      deliverAt - now > this.config.timerHorizonMs
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot reschedule to ${deliverAt}: it must be an epoch ms within timerHorizonMs ${this.config.timerHorizonMs} ms`,
      );
    }
    const outcome = await this.timers!.reschedule(messageId, Math.max(deliverAt, now), topic).catch(
      (err) => {
        throw fromStoreError(err);
      },
    );
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "ALREADY_DELIVERED",
        `Cannot reschedule ${messageId}: it has already been delivered`,
      );
    }
    return { messageId, status: "RESCHEDULED", deliverAt: Math.max(deliverAt, now) };
  }

  /** Cancels every pending scheduled message of `topic` whose keys hold `key`. */
  async cancelScheduledByKey(topic: string, key: string): Promise<ScheduledOutcome[]> {
    checkReadableTopic(topic);
    const out: ScheduledOutcome[] = [];
    for (const id of this.timers!.idsByKey(topic, key)) {
      const outcome = await this.timers!.cancel(id, topic);
      if (outcome === "CANCELLED") out.push({ messageId: id, status: outcome });
    }
    return out;
  }

  // ---- cron schedules ----

  async createSchedule(input: CronScheduleInput): Promise<CronScheduleView> {
    await this.#writableTopic(input.topic);
    checkCron(input.cron, input.timeZone ?? "UTC");
    if (
      input.missedTicks !== undefined && input.missedTicks !== "skip" &&
      input.missedTicks !== "fire_once"
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot use missedTicks ${JSON.stringify(input.missedTicks)}: skip or fire_once`,
      );
    }
    return this.#cron!.create(input);
  }
  listSchedules(): Promise<CronScheduleView[]> {
    return Promise.resolve(this.#cron!.list());
  }
  getSchedule(id: string): Promise<CronScheduleView> {
    return Promise.resolve().then(() => this.#cron!.get(id));
  }
  setSchedulePaused(id: string, paused: boolean): Promise<CronScheduleView> {
    return Promise.resolve().then(() => this.#cron!.setPaused(id, paused));
  }
  deleteSchedule(id: string): Promise<void> {
    return Promise.resolve().then(() => this.#cron!.delete(id));
  }

  // ---- webhook subscriptions ----

  /** Creates or replaces the webhook subscription of a group (creating the group too). */
  async upsertSubscription(group: string, input: SubscriptionInput): Promise<SubscriptionView> {
    checkGroup(group);
    const webhooks = this.webhooks!;
    const previous = webhooks.get(group);
    if (!previous && webhooks.size >= this.config.webhookSubscriptionsMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot add another subscription: webhookSubscriptionsMax ${this.config.webhookSubscriptionsMax} reached`,
      );
    }
    const sub = normalizeSubscription(
      group,
      input,
      previous,
      this.config,
      (url) => this.#egress!.checkUrl(url),
      this.deps.nowMs(),
    );
    checkUserTopic(sub.topic);
    parseTagExpression(sub.tags);
    const topic = this.#topics.get(sub.topic) ??
      (this.config.autoCreateTopicEnable ? await this.#writableTopic(sub.topic) : undefined);
    if (!topic) {
      throw new BrokerError("TOPIC_NOT_FOUND", `No topic ${sub.topic}; create it first`);
    }
    const current = this.#groupConfigs.get(group);
    const { group: _g, ...groupSettings } = current
      ? toGroupView(current)
      : { group, consumeFromWhere: "LAST_OFFSET" as const };
    await this.upsertGroup(group, {
      ...groupSettings,
      retryMaxTimes: input.retryMaxTimes ?? 16,
      retryBackoffMs: input.retryBackoffMs ?? null,
      orderly: sub.ordered,
    });
    if (!previous || previous.topic !== sub.topic) {
      const start = input.startFrom ?? "latest";
      for (let q = 0; q < topic.readQueueNums; q++) {
        if (this.#offsets!.query(group, sub.topic, q) !== undefined) continue;
        this.#offsets!.commit(
          group,
          sub.topic,
          q,
          start === "latest"
            ? this.store.getMaxOffsetInQueue(sub.topic, q)
            : start === "earliest"
            ? this.store.getMinOffsetInQueue(sub.topic, q)
            : this.store.getOffsetInQueueByTime(sub.topic, q, start),
        );
      }
    }
    await this.#offsets!.persist(); // the start position survives a crash from now on
    await this.#subscriptions!.save(sub);
    await webhooks.put(sub);
    return webhooks.view(sub, true);
  }

  listSubscriptions(): Promise<SubscriptionView[]> {
    return Promise.resolve(this.webhooks!.list().map((s) => this.webhooks!.view(s)));
  }

  getSubscription(group: string): Promise<SubscriptionView> {
    return Promise.resolve(this.webhooks!.view(this.#subscription(group)));
  }

  async deleteSubscription(group: string): Promise<void> {
    this.#subscription(group);
    await this.webhooks!.remove(group);
    await this.#subscriptions!.delete(group);
  }

  /** Pause stops deliveries (those in flight finish); resume also re-enables after a 410. */
  async setSubscriptionPaused(group: string, paused: boolean): Promise<SubscriptionView> {
    const sub = this.#subscription(group);
    const status = paused ? "paused" : "active";
    const next = {
      ...sub,
      status,
      statusReason: paused ? "paused by request" : null,
      updatedAt: this.deps.nowMs(),
    } as const;
    await this.#subscriptions!.save(next);
    await this.webhooks!.put(next);
    return this.webhooks!.view(next);
  }

  /** Delivers again everything stored since `timestamp` (offsets reset to that time). */
  async replaySubscription(group: string, timestamp: number): Promise<SubscriptionView> {
    const sub = this.#subscription(group);
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
      throw new BrokerError("INVALID_PARAMETER", "timestamp must be a time in ms since the epoch");
    }
    const topic = this.#readableTopic(sub.topic, 0);
    await this.webhooks!.restart(group, () => {
      for (let q = 0; q < topic.readQueueNums; q++) {
        this.#offsets!.commit(
          group,
          sub.topic,
          q,
          this.store.getOffsetInQueueByTime(sub.topic, q, timestamp),
        );
      }
    });
    await this.#offsets!.persist();
    return this.webhooks!.view(this.#subscription(group));
  }

  listDeliveries(
    group: string,
    query: { messageId?: string; limit?: number } = {},
  ): Promise<DeliveryAttempt[]> {
    this.#subscription(group);
    if (query.messageId !== undefined && !MESSAGE_ID_PATTERN.test(query.messageId)) {
      throw new BrokerError("INVALID_PARAMETER", "messageId must be a message id");
    }
    const limit = query.limit ?? 100;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > this.config.webhookLogEntriesMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `limit must be 1-${this.config.webhookLogEntriesMax} (webhookLogEntriesMax)`,
      );
    }
    return Promise.resolve(this.webhooks!.log.list(group, { ...query, limit }));
  }

  #subscription(group: string): StoredSubscription {
    checkGroup(group);
    const sub = this.webhooks!.get(group);
    if (!sub) {
      throw new BrokerError(
        "SUBSCRIPTION_NOT_FOUND",
        `No webhook subscription for group ${group}; create it with PUT /v1/subscriptions/${group}`,
      );
    }
    return sub;
  }

  health(): Promise<HealthInfo> {
    return Promise.resolve({
      status: this.store.writable ? "ok" : "degraded",
      brokerName: this.config.brokerName,
      writable: this.store.writable,
      flushDiskType: this.config.store.flushDiskType,
      commitLogMaxOffset: this.store.maxPhysicalOffset,
      runtime: this.deps.runtime,
      scheduled: this.#scheduledStats(),
    });
  }

  /** Pending counts and recent lateness of delayed and timed messages. */
  #scheduledStats(): ScheduledStats {
    const levels = this.schedule?.pending() ?? [];
    return {
      timersPending: this.timers?.pending ?? 0,
      timersDelivered: this.timers?.delivered ?? 0,
      timerLateP50Ms: quantile(this.timers?.lateness ?? [], 0.5),
      timerLateP99Ms: quantile(this.timers?.lateness ?? [], 0.99),
      delayLevelPending: levels,
      delayLevelLateP99Ms: quantile(this.schedule?.lateness ?? [], 0.99),
    };
  }

  /** Prometheus text exposition of the broker's gauges. */
  metrics(): string {
    const lines = [
      "# TYPE mq_commitlog_max_offset gauge",
      `mq_commitlog_max_offset ${this.store.maxPhysicalOffset}`,
      "# TYPE mq_commitlog_flushed_offset gauge",
      `mq_commitlog_flushed_offset ${this.store.stats().flushedOffset}`,
      "# TYPE mq_held_pulls gauge",
      `mq_held_pulls ${this.holds.held}`,
      "# TYPE mq_store_writable gauge",
      `mq_store_writable ${this.store.writable ? 1 : 0}`,
      "# TYPE mq_topics gauge",
      `mq_topics ${this.#topics.size}`,
    ];
    const s = this.#scheduledStats();
    lines.push(
      "# TYPE mq_timers_pending gauge",
      `mq_timers_pending ${s.timersPending}`,
      "# TYPE mq_timers_delivered_total counter",
      `mq_timers_delivered_total ${s.timersDelivered}`,
      "# TYPE mq_timer_lateness_ms gauge",
      `mq_timer_lateness_ms{quantile="0.5"} ${s.timerLateP50Ms}`,
      `mq_timer_lateness_ms{quantile="0.99"} ${s.timerLateP99Ms}`,
      "# TYPE mq_delay_level_pending gauge",
      ...s.delayLevelPending.map((n, i) => `mq_delay_level_pending{level="${i + 1}"} ${n}`),
    );
    return lines.join("\n") + "\n";
  }
}

function toGroupView(g: ConsumerGroupConfig): GroupView {
  return {
    group: g.groupName,
    messageModel: g.messageModel,
    consumeFromWhere: g.consumeFromWhere,
    consumeTimestampMs: g.consumeTimestampMs,
    retryMaxTimes: g.retryMaxTimes,
    retryBackoffMs: g.retryBackoffMs ? [...g.retryBackoffMs] : null,
    orderly: g.orderly,
  };
}

function toTopic(t: StoredTopic): TopicConfig {
  return {
    name: t.topicName,
    readQueueNums: t.readQueueNums,
    writeQueueNums: t.writeQueueNums,
    perm: t.perm,
    order: t.order,
  };
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

/** The perm check of #writableTopic, once the topic is known. */
function writable(topic: TopicConfig): TopicConfig {
  if (!(topic.perm & PERM_WRITE)) {
    throw new BrokerError(
      "TOPIC_PERMISSION_DENIED",
      `Cannot produce to ${topic.name} as its perm ${topic.perm} lacks WRITE (2)`,
    );
  }
  return topic;
}

/** A put's rejection handler: one function for all puts, so none allocates a closure. */
function rethrowStoreError(err: unknown): never {
  throw fromStoreError(err);
}

export function asBrokerError(err: unknown): BrokerError {
  if (err instanceof BrokerError) return err;
  const mapped = fromStoreError(err);
  if (mapped instanceof BrokerError) return mapped;
  return new BrokerError("INTERNAL", "Internal error", {}, { cause: err });
}

/** The q-quantile of recent samples (0 when there are none). */
function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}
