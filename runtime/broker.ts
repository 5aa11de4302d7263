// The in-process core: one broker process owning one data folder, opened by an async
// factory that builds every part first (runtime/core/compose.ts). It implements the core
// API (ProducerApi, ConsumerApi, AdminApi) by handing each call to the module that owns
// that concern; the HTTP routes, the HA node and tests all reach the broker through it.
import type {
  BrokerClient,
  DrainStatusApi,
  OpsApi,
  QstashApi,
  RecordApi,
  ScheduleMoveApi,
  TransactionApi,
  TransactionCheckHost,
} from "./protocol/core_api.ts";
import { BrokerError } from "./protocol/errors.ts";
import type { TopicConfig } from "./protocol/types.ts";
import type { BrokerConfig } from "./config.ts";
import type { MessageStore } from "../storage/message_store.ts";
import type { PullHoldService } from "./long_polling.ts";
import type { ConsumerMembership } from "./consumer/membership.ts";
import { encodeSnapshot, exportMetadata } from "../storage/metadata/metadata_snapshot.ts";
import { type BrokerDeps, type BrokerParts, closeParts, openParts } from "./core/compose.ts";
import { ConsumerOffsets } from "./core/offsets.ts";
import { Puller } from "./core/puller.ts";
import { MessageLookup } from "./core/lookup.ts";
import { PopApi } from "./core/pop_api.ts";
import { MembershipApi } from "./core/membership_api.ts";
import { DeadLetters } from "./core/dlq.ts";
import { forwardToDlq } from "./core/dead_letter_forward.ts";
import { Scheduling } from "./core/scheduling.ts";
import { SubscriptionsAdmin } from "./core/subscriptions_admin.ts";
import { Observability } from "./core/observability.ts";
import { OpsViews } from "./core/ops_views.ts";
import { drainStatusOf } from "./core/drain_status.ts";
import { countTraffic } from "./core/traffic_api.ts";
import { brokerMetrics, type PopCounters } from "./core/broker_metrics.ts";
import { TrafficCounters } from "./core/traffic.ts";
import { RecordsApi } from "./core/records_api.ts";
import { QstashDeadLetters } from "./core/qstash_dlq.ts";
import { qstashApi } from "./core/qstash_api.ts";
import { storeHostOf } from "./core/store_host.ts";
import { singleGroupRoutes, singleGroupUpsert } from "./core/single_group_route.ts";

export type { BrokerDeps } from "./core/compose.ts";
export type { ReplicationGate } from "./core/replication_gate.ts";

export class Broker implements BrokerClient, RecordApi, OpsApi, DrainStatusApi {
  /** The QStash front end's calls (functions/qstash/). */
  readonly qstash: QstashApi;
  readonly config: BrokerConfig;
  readonly store: MessageStore;
  readonly holds: PullHoldService;
  readonly membership: ConsumerMembership;
  readonly #deps: BrokerDeps;
  readonly #parts: BrokerParts;
  readonly #puller: Puller;
  readonly #observability: Observability;
  /** Produce and consume counters per topic since start (metrics, topic stats). */
  readonly traffic: TrafficCounters;
  readonly #pop: PopCounters = { received: 0, acked: 0, nacked: 0 };
  readonly #views: OpsViews;
  readonly drainStatus: DrainStatusApi["drainStatus"];
  readonly #expireTimer: ReturnType<typeof setInterval>;
  #closed = false;

  /** Opens the store (unless one is given), the metadata and every service, in order. */
  static async open(deps: BrokerDeps): Promise<Broker> {
    return new Broker(deps, await openParts(deps));
  }

  private constructor(deps: BrokerDeps, parts: BrokerParts) {
    const { config, nowMs } = deps;
    const { store, topics, groups, offsets, producer } = parts;
    this.#deps = deps;
    this.#parts = parts;
    this.config = config;
    this.store = store;
    this.holds = parts.holds;
    this.membership = parts.membership;
    this.#puller = new Puller({
      store,
      holds: parts.holds,
      offsets,
      topics,
      groups,
      settings: config,
      bodyText: deps.bodyText,
      nowMs,
    });
    this.traffic = new TrafficCounters(nowMs);
    topics.onDeleted((topic) => this.traffic.forget(topic));
    this.#observability = new Observability({
      store,
      holds: parts.holds,
      topics,
      timers: parts.timers,
      schedule: parts.schedule,
      brokerName: config.brokerName,
      flushDiskType: config.store.flushDiskType,
      runtime: deps.runtime,
      transactions: () => parts.transactions.stats(),
    });
    const writableTopic = (name: string) => producer.writableTopic(name);
    const consumerOffsets = new ConsumerOffsets({ store, offsets, topics, groups });
    const lookup = new MessageLookup(
      store,
      topics,
      config,
      deps.bodyText,
      (id) => parts.transactions.getTransaction(id).then((t) => t.state, () => undefined),
    );
    const pop = new PopApi(parts.pop, topics, groups, config);
    const members = new MembershipApi({
      membership: parts.membership,
      topics,
      groups,
      brokerName: config.brokerName,
      nowMs,
    });
    const dlq = new DeadLetters({
      store,
      offsets,
      producer,
      topics,
      groups,
      settings: config,
      bodyText: deps.bodyText,
    });
    this.qstash = qstashApi(
      parts.qstash,
      new QstashDeadLetters({
        store,
        state: parts.qstashState,
        files: deps.files,
        dataDir: config.dataDir,
        storeHost: storeHostOf(config),
        listDlq: (g, o) => dlq.listDlq(g, o),
        pageMax: config.pullMsgNumsMax,
      }),
      (id) => parts.cron.message(id),
    );
    const scheduling = new Scheduling({
      timers: parts.timers,
      cron: parts.cron,
      writableTopic,
      checkMessage: (m) => producer.checkMessage(m),
      timerHorizonMs: config.timerHorizonMs,
      nowMs,
    });
    const subscriptions = new SubscriptionsAdmin({
      webhooks: parts.webhooks,
      repo: parts.subscriptions,
      egress: parts.egress,
      store,
      offsets,
      topics,
      groups,
      writableTopic,
      settings: config,
      nowMs,
    });
    const records = new RecordsApi({
      store,
      topics,
      groups,
      storeHost: storeHostOf(config),
      queryMessageNumsMax: config.queryMessageNumsMax,
    });
    const api: BrokerClient & RecordApi & ScheduleMoveApi = {
      pullRecords: (t, q, r, s) => this.#puller.pullRecords(t, q, r, s),
      queueRange: (t, q) => records.queueRange(t, q),
      offsetByTime: (t, q, ts) => records.offsetByTime(t, q, ts),
      recordAt: (o) => records.recordAt(o),
      findRecords: (t, q) => records.findRecords(t, q),
      sendBack: (g, r) => records.sendBack(g, r),
      groupMembers: (g) => Promise.resolve(members.members(g)),
      produce: (t, m) => producer.produce(t, m),
      produceBatch: (t, ms) => producer.produceBatch(t, ms),
      cancelScheduled: (t, id) => scheduling.cancelScheduled(t, id),
      cancelScheduledByKey: (t, k) => scheduling.cancelScheduledByKey(t, k),
      rescheduleScheduled: (t, id, at) => scheduling.rescheduleScheduled(t, id, at),
      pull: (t, q, r, s) => this.#puller.pull(t, q, r, s),
      receive: (g, o, s) => pop.receive(g, o, s),
      ack: (g, h) => pop.ack(g, h),
      ackBatch: (g, hs) => pop.ackBatch(g, hs),
      nack: (g, h, d) => pop.nack(g, h, d),
      changeInvisibleTime: (g, h, ms) => pop.changeInvisibleTime(g, h, ms),
      deadLetter: (g, h) =>
        forwardToDlq(
          {
            store,
            checkpointOf: (group, handle) => parts.pop.checkpointOf(group, handle),
            groups,
            storeHost: storeHostOf(config),
            ack: (group, handle) => pop.ack(group, handle),
          },
          g,
          h,
        ),
      commitOffset: (g, t, q, o) => consumerOffsets.commitOffset(g, t, q, o),
      getOffsets: (g, t) => consumerOffsets.getOffsets(g, t),
      getOffset: (g, t, q) => consumerOffsets.getOffset(g, t, q),
      heartbeat: (g, data) => members.heartbeat(g, data),
      unregister: (g, c) => members.unregister(g, c),
      assignment: (g, c, t, o) => members.assignment(g, c, t, o),
      lockQueues: (g, c, t, qs, unlock) => members.lockQueues(g, c, t, qs, unlock),
      upsertTopic: async (n, u) => await topics.upsert(n, singleGroupUpsert(config.brokerName, u)),
      getTopic: (n) => topics.get(n),
      listTopics: () => topics.list(),
      deleteTopic: (n) => topics.delete(n),
      upsertGroup: (g, s) => groups.upsert(g, s),
      getGroup: (g) => groups.get(g),
      resetOffsetsByTime: (g, t, ts) => consumerOffsets.resetOffsetsByTime(g, t, ts),
      listDlq: (g, o) => dlq.listDlq(g, o),
      redriveDlq: (g, ids) => dlq.redriveDlq(g, ids),
      purgeDlq: (g) => dlq.purgeDlq(g),
      createSchedule: (i) => scheduling.createSchedule(i),
      listSchedules: () => scheduling.listSchedules(),
      getSchedule: (id) => scheduling.getSchedule(id),
      setSchedulePaused: (id, p) => scheduling.setSchedulePaused(id, p),
      deleteSchedule: (id) => scheduling.deleteSchedule(id),
      exportSchedule: (id) => scheduling.exportSchedule(id),
      importSchedule: (s) => scheduling.importSchedule(s),
      upsertSubscription: (g, i) => subscriptions.upsertSubscription(g, i),
      listSubscriptions: (o) => subscriptions.listSubscriptions(o),
      getSubscription: (g) => subscriptions.getSubscription(g),
      deleteSubscription: (g) => subscriptions.deleteSubscription(g),
      setSubscriptionPaused: (g, p) => subscriptions.setSubscriptionPaused(g, p),
      replaySubscription: (g, ts) => subscriptions.replaySubscription(g, ts),
      listDeliveries: (g, q) => subscriptions.listDeliveries(g, q),
      getMessageById: (id, t) => lookup.getMessageById(id, t),
      findMessages: (t, q) => lookup.findMessages(t, q),
      health: () => this.#observability.health(),
      ...singleGroupRoutes(config.brokerName, (t) => topics.get(t)),
    };
    const views = this.#views = new OpsViews({
      store,
      offsets,
      consumerOffsets,
      topics,
      groups,
      dlq,
      traffic: this.traffic,
      brokerName: config.brokerName,
    });
    const ops: OpsApi = {
      listGroups: () => views.listGroups(),
      topicStats: (t) => views.topicStats(t),
      groupProgress: (g) => views.groupProgress(g),
      clusterView: () => views.clusterView(),
    };
    this.drainStatus = drainStatusOf(parts, config.brokerName);
    Object.assign(this, countTraffic(api, this.traffic, this.#pop), ops);
    const tx = parts.transactions;
    const transactions: TransactionApi & TransactionCheckHost = {
      beginTransaction: (t, m, g) => tx.beginTransaction(t, m, g),
      endTransaction: (id, d, o) => tx.endTransaction(id, d, o),
      getTransaction: (id) => tx.getTransaction(id),
      setTransactionCheck: (g, i) => tx.setTransactionCheck(g, i),
      getTransactionCheck: (g) => tx.getTransactionCheck(g),
      deleteTransactionCheck: (g) => tx.deleteTransactionCheck(g),
      listTransactionChecks: (o) => tx.listTransactionChecks(o),
      pollTransactionChecks: (g, o, s) => tx.pollTransactionChecks(g, o, s),
      registerTransactionCheckChannel: (g, c) => tx.registerTransactionCheckChannel(g, c),
    };
    Object.assign(this, transactions);
    // The NameServer-style scan: silent consumers go after consumerTimeoutMs.
    this.#expireTimer = setInterval(
      () => parts.membership.expire(nowMs()),
      config.consumerExpiryScanIntervalMs,
    );
    (this.#expireTimer as { unref?: () => void }).unref?.();
  }

  /** The first 20 hex characters of the message ids this broker makes. */
  get idPrefix(): string {
    return this.#parts.idPrefix;
  }

  get topicNames(): string[] {
    return this.#parts.topics.names();
  }
  topicConfigs(): TopicConfig[] {
    return this.#parts.topics.configs();
  }

  /** Prometheus text exposition of the broker's figures. */
  async metrics(): Promise<string> {
    const more = await brokerMetrics({
      store: this.store,
      traffic: this.traffic,
      views: this.#views,
      deliveries: this.#parts.webhooks.log,
      diskUsedRatio: this.#deps.diskUsedRatio,
      pop: this.#pop,
      popInFlight: () => this.#parts.pop.inFlight,
    });
    return this.#observability.metrics() + more.join("\n") + "\n";
  }

  /** Every replicated metadata table (topics, groups, offsets, subscriptions, schedules),
   * for the group's slaves (runtime/ha/metadata_sync.ts). */
  async metadataSnapshot(): Promise<Uint8Array> {
    if (this.#closed) {
      throw new BrokerError(
        "BROKER_UNAVAILABLE",
        "Cannot export metadata: the broker is not running",
      );
    }
    return encodeSnapshot(
      await exportMetadata(this.#parts.metadataHandle.db, {
        offsets: this.#parts.offsets,
        nowMs: this.#deps.nowMs,
      }),
    );
  }

  /** First step of a graceful stop: answer held pulls now and refuse new writes. */
  drain(): void {
    this.#parts.producer.close();
    this.#puller.close();
  }

  /** Graceful stop: answer held pulls, stop taking writes, flush, persist offsets. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#expireTimer);
    await this.#parts.cron.stop(); // a tick in flight still publishes
    this.drain();
    await closeParts(this.#parts, this.#deps.log);
  }
}

export interface Broker
  extends BrokerClient, RecordApi, OpsApi, TransactionApi, TransactionCheckHost, ScheduleMoveApi {}
