// The composition root: builds every part of a broker, in dependency order, before
// anything can call it, and closes them in reverse. Each part receives what it uses.
import { MessageStore } from "../../storage/message_store.ts";
import type { FilePort } from "../../storage/file_port.ts";
import type { RecoveryProgress } from "../../storage/recovery.ts";
import {
  type MetadataDbHandle,
  openMetadataDb,
  type SqliteOpen,
} from "../../storage/metadata/sqlite.ts";
import type { BodyText } from "../platform/platform.ts";
import { MetadataStore } from "../../storage/metadata/metadata_store.ts";
import { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import {
  REVIVE_TOPIC,
  SCHEDULE_TOPIC,
  TIMER_TOPIC,
  TRANS_HALF_TOPIC,
  TRANS_OP_TOPIC,
} from "../../storage/message/message_const.ts";
import type { BrokerConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import type { ProduceResult } from "../protocol/types.ts";
import { MessageIdGenerator } from "../message_id.ts";
import { PullHoldService } from "../long_polling.ts";
import { IdempotencyCache } from "../idempotency.ts";
import { ScheduleService } from "../schedule_service.ts";
import { TimerService } from "../timer_service.ts";
import { CronService } from "../cron_service.ts";
import { ConsumerMembership } from "../consumer/membership.ts";
import { PopService } from "../pop_service.ts";
import { WebhookService } from "../webhook/delivery_service.ts";
import { SubscriptionRepo } from "../webhook/subscriptions.ts";
import { createEgress, type WebhookEgress } from "../webhook/egress.ts";
import { parseTagExpression } from "../wire.ts";
import { ArrivalRouter } from "./arrivals.ts";
import { TopicRegistry } from "./topic_registry.ts";
import { GroupRegistry } from "./group_registry.ts";
import { Producer } from "./producer.ts";
import type { ReplicationGate } from "./replication_gate.ts";
import { LOOPBACK, storeHostOf } from "./store_host.ts";
import { createTransactionService, type TransactionService } from "./transaction_service.ts";
import { TRANS_CHECK_URL_TOPIC } from "./transaction_channels.ts";
import { QstashCore } from "./qstash.ts";
import { QstashStateRepo } from "../../storage/metadata/qstash_state_repo.ts";

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
  /** The platform's: a stored body as JSON text, or undefined for base64. */
  bodyText: BodyText;
  /** The platform's SQLite binding, for the metadata file. */
  openSqlite: SqliteOpen;
  /** Told how far the store's recovery scan got, now and then (readiness). */
  onRecoveryProgress?: (progress: RecoveryProgress) => void;
}

/** The services a broker is made of, all built and started. */
export interface BrokerParts {
  /** The first 20 hex characters of every id this process makes (IP, PID, random). */
  idPrefix: string;
  store: MessageStore;
  metadataHandle: MetadataDbHandle;
  metadata: MetadataStore;
  offsets: ConsumerOffsetStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  holds: PullHoldService;
  membership: ConsumerMembership;
  producer: Producer;
  schedule: ScheduleService;
  timers: TimerService;
  cron: CronService;
  pop: PopService;
  egress: WebhookEgress;
  subscriptions: SubscriptionRepo;
  webhooks: WebhookService;
  transactions: TransactionService;
  qstash: QstashCore;
  /** The QStash dialect's stored state (keys, DLQ tombstones). */
  qstashState: QstashStateRepo;
}

export async function openParts(deps: BrokerDeps): Promise<BrokerParts> {
  const { config, files, log, nowMs } = deps;
  const storeHost = storeHostOf(config);
  const ids = new MessageIdGenerator({
    ip: LOOPBACK.ip,
    pid: deps.pid,
    nowMs,
    random: deps.random,
  });
  files.mkdirp(config.dataDir);
  const store = deps.store ?? await openStore(deps);
  const arrivals = new ArrivalRouter(store);
  const holds = new PullHoldService({ holdsMax: config.heldPullsMax });
  arrivals.registerClientTopics((topic, queueId, maxOffset) => {
    holds.arriving(topic, queueId, maxOffset);
  });
  const schedule = new ScheduleService(store, {
    files,
    dataDir: config.dataDir,
    nowMs,
    log,
    storeHost,
    flushDelayOffsetIntervalMs: config.flushDelayOffsetIntervalMs,
  });
  arrivals.registerSystemTopic(SCHEDULE_TOPIC, (_t, queueId) => schedule.arriving(queueId));
  schedule.start();
  const timers = new TimerService(store, {
    files,
    dataDir: config.dataDir,
    nowMs,
    log,
    storeHost,
    timer: {
      precisionMs: config.timerPrecisionMs,
      horizonMs: config.timerHorizonMs + config.timerPrecisionMs,
    },
    timerRollWindowMs: config.timerRollWindowMs,
    timerCheckpointIntervalMs: config.timerCheckpointIntervalMs,
  });
  arrivals.registerSystemTopic(TIMER_TOPIC, () => timers.arriving());
  // POP CKs on the timer wheel from before the upgrade: held until PopService exists.
  const legacyCks: Uint8Array[] = [];
  let reviveLegacy = (
    body: Uint8Array,
  ): Promise<unknown> => (legacyCks.push(body), Promise.resolve());
  timers.diverted.set(REVIVE_TOPIC, (record) => reviveLegacy(record.body));
  await timers.start();
  const metadataHandle = await openMetadataDb(
    `${config.dataDir}/metadata.sqlite`,
    deps.openSqlite,
  );
  const metadata = new MetadataStore(metadataHandle.db, {
    nowMs,
    retryMaxTimesDefault: config.retryMaxTimesDefault,
  });
  const offsets = await ConsumerOffsetStore.open(metadataHandle.db, { nowMs });
  offsets.start({
    intervalMs: config.offsetPersistIntervalMs,
    onPersistError: (err) =>
      log("error", "persisting consumer offsets failed", { err: String(err) }),
  });
  const topics = await TopicRegistry.load(metadata, config);
  topics.onDeleted((topic) => {
    offsets.removeTopic(topic);
    store.deleteTopic(topic);
  });
  const groups = await GroupRegistry.load(metadata, config);
  const producer = new Producer({
    store,
    topics,
    idempotency: new IdempotencyCache<ProduceResult>({
      windowMs: config.idempotencyWindowMs,
      keysMax: config.idempotencyKeysMax,
      nowMs,
    }),
    ids,
    replication: deps.replication,
    storeHost,
    rules: {
      userPropertiesMax: config.userPropertiesMax,
      idempotencyKeyBytesMax: config.idempotencyKeyBytesMax,
      delayLevels: store.delayLevelsMs.length,
      delayLevelsText: config.store.messageDelayLevel,
    },
    timerHorizonMs: config.timerHorizonMs,
    nowMs,
    random: deps.random,
  });
  const cron = new CronService({
    db: metadataHandle.db,
    produce: (topic, message) => producer.produce(topic, message),
    nowMs,
    log,
    schedulesMax: config.cronSchedulesMax,
    newId: () => crypto.randomUUID(),
  });
  await cron.start();
  const offsetPort = {
    query: (g: string, t: string, q: number) => offsets.query(g, t, q),
    commit: (g: string, t: string, q: number, o: number) => offsets.commit(g, t, q, o),
  };
  const pop = new PopService({
    store,
    holds,
    nowMs,
    log,
    newId: () => ids.next(),
    storeHost,
    offsets: offsetPort,
    groupOf: (group) => groups.find(group),
    bodyText: deps.bodyText,
    settings: config,
    delayLevelsMs: store.delayLevelsMs,
  });
  // The revive topic holds POP's own records; PopService keeps their state in memory.
  arrivals.registerSystemTopic(REVIVE_TOPIC, () => {});
  pop.start(); // replays the revive topic: the messages in flight before a restart
  reviveLegacy = (body) => pop.reviveLegacy(body);
  for (const body of legacyCks.splice(0)) {
    pop.reviveLegacy(body).catch((err) => log("error", "revive failed", { err: String(err) }));
  }
  const egress = createEgress(config, log);
  const subscriptions = new SubscriptionRepo(metadataHandle.db);
  const qstashState = new QstashStateRepo(metadataHandle.db, nowMs);
  const qstash = new QstashCore({
    state: qstashState,
    files,
    dataDir: config.dataDir,
    settings: {
      ...config,
      retriesDefault: config.qstashRetriesDefault,
      retriesMax: config.qstashRetriesMax,
      retryBackoffMs: config.qstashRetryBackoffMs.map(Number),
      concurrency: config.qstashConcurrency,
      timeoutMsMax: config.webhookTimeoutMsMax,
    },
    checkUrl: (url) => egress.checkUrl(url),
    produce: (topic, message) => producer.produce(topic, message),
    nowMs,
    log,
  });
  await qstash.start();
  const webhooks = new WebhookService({
    qstash,
    store,
    offsets: offsetPort,
    transport: egress.transport,
    nowMs,
    log,
    storeHost,
    settings: config,
    readQueueNums: (topic) => topics.find(topic)?.readQueueNums,
    retryPolicy: (group) => {
      const g = groups.find(group);
      return {
        retryMaxTimes: g?.retryMaxTimes ?? config.retryMaxTimesDefault,
        backoffList: g?.retryBackoffMs ? [...g.retryBackoffMs] : null,
        backoffMs: (n) => pop.backoffMs(group, n),
      };
    },
    parseTags: (expression) => parseTagExpression(expression),
    saveStatus: (group, status, reason) => subscriptions.saveStatus(group, status, reason, nowMs()),
  });
  arrivals.registerClientTopics((topic, queueId) => webhooks.arriving(topic, queueId));
  webhooks.start(await subscriptions.load());
  const transactions = createTransactionService({
    store,
    producer,
    ids,
    offsets: offsetPort,
    egress,
    config,
    bodyText: deps.bodyText,
    nowMs,
    log,
  });
  // Half, op and check URL records are the check service's own: no long poll or webhook hears them.
  arrivals.registerSystemTopic(TRANS_HALF_TOPIC, () => {});
  arrivals.registerSystemTopic(TRANS_OP_TOPIC, () => {});
  arrivals.registerSystemTopic(TRANS_CHECK_URL_TOPIC, () => {});
  transactions.start();
  const membership = new ConsumerMembership({
    nowMs,
    memberTimeoutMs: config.consumerTimeoutMs,
    lockTimeoutMs: config.queueLockTimeoutMs,
    membersMax: config.consumerMembersMax,
  });
  return {
    idPrefix: ids.prefix,
    store,
    metadataHandle,
    metadata,
    offsets,
    topics,
    groups,
    holds,
    membership,
    producer,
    schedule,
    timers,
    cron,
    pop,
    egress,
    subscriptions,
    webhooks,
    transactions,
    qstash,
    qstashState,
  };
}

async function openStore(deps: BrokerDeps): Promise<MessageStore> {
  const store = new MessageStore({
    files: deps.files,
    config: deps.config.store,
    nowMs: deps.nowMs,
    log: deps.log,
    diskUsedRatio: deps.diskUsedRatio,
  });
  const started = deps.nowMs();
  const report = await store.open({ onRecoveryProgress: deps.onRecoveryProgress });
  deps.log("info", "store recovered", { ...report, ms: deps.nowMs() - started });
  store.start();
  return store;
}

/** Stops every part but cron (stopped first, before writes end) in reverse order of
 * need; a failing part is logged, not fatal. */
export async function closeParts(p: BrokerParts, log: Logger): Promise<void> {
  const step = async (what: string, f: () => Promise<unknown>) => {
    await f().catch((err) => log("error", `${what} failed`, { err: String(err) }));
  };
  await step("stopping transaction checks", () => p.transactions.stop());
  await step("stopping webhook deliveries", () => p.webhooks.close());
  await step("closing webhook connections", () => p.egress.close());
  await step("stopping POP revive", () => p.pop.close());
  await step("stopping timers", () => p.timers.stop());
  await step("persisting delay offsets", () => p.schedule.stop());
  await step("final offset persist", () => p.offsets.stop());
  await p.store.close();
  p.metadataHandle.close();
}
