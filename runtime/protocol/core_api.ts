// The core API: what every front end (HTTP /v1, QStash, gRPC, remoting) and the cluster
// router call, split by who calls it, as RocketMQ 5's proxy splits MessagingProcessor into
// producer, consumer and admin processors. A front end depends only on the interface it
// needs; the in-process core (runtime/core/) and the HTTP client (client/) implement all
// three. Pure types: importable from functions/, browsers and edge runtimes.
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
  RecordPullResult,
  ScheduledOutcome,
  SendBackRequest,
  SendBackResult,
  SignalSource,
  SubscriptionInput,
  SubscriptionView,
  TopicConfig,
  TopicUpsert,
  WireMessage,
} from "./types.ts";
import type {
  TransactionBegun,
  TransactionCheck,
  TransactionCheckAnswer,
  TransactionCheckInput,
  TransactionCheckView,
  TransactionDecision,
  TransactionPollOptions,
  TransactionView,
} from "./transaction_types.ts";
import type { ClusterView, DrainStatus, GroupProgress, TopicStats } from "./ops_types.ts";
import type { AssignmentOptions, CronScheduleExport, TopicRouteView } from "./cluster_types.ts";
import type { QstashScheduleDetails, QstashSettings, QstashSigningKeys } from "./qstash.ts";

/** Producing: single and batch sends, and the scheduled messages a producer owns. */
export interface ProducerApi {
  produce(topic: string, message: ProduceMessage): Promise<ProduceResult>;
  produceBatch(topic: string, messages: ProduceMessage[]): Promise<BatchItemResult[]>;
  cancelScheduled(topic: string, messageId: string): Promise<ScheduledOutcome>;
  cancelScheduledByKey(topic: string, key: string): Promise<ScheduledOutcome[]>;
  rescheduleScheduled(
    topic: string,
    messageId: string,
    deliverAt: number,
  ): Promise<ScheduledOutcome>;
}

/** Consuming: pull by offset, POP receive/ack/nack/invisibility, offsets, membership and
 * queue locks for ordered consumption. */
export interface ConsumerApi {
  pull(
    topic: string,
    queueId: number,
    request: PullRequest,
    signal?: SignalSource,
  ): Promise<PullResult>;
  receive(group: string, options: ReceiveOptions, signal?: SignalSource): Promise<PopMessage[]>;
  ack(group: string, receiptHandle: string): Promise<void>;
  ackBatch(group: string, receiptHandles: string[]): Promise<AckResult[]>;
  nack(group: string, receiptHandle: string, delayMs?: number): Promise<void>;
  changeInvisibleTime(
    group: string,
    receiptHandle: string,
    invisibleMs: number,
  ): Promise<{ invisibleUntil: number }>;
  /** Sends a received message to %DLQ%{group} at once and acks it (RocketMQ 5's
   * ForwardMessageToDeadLetterQueue). Optional: the HTTP client (split mode) lacks it. */
  deadLetter?(group: string, receiptHandle: string): Promise<void>;
  commitOffset(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<QueueOffsetInfo>;
  getOffsets(group: string, topic: string): Promise<GroupOffsets>;
  getOffset(group: string, topic: string, queueId: number): Promise<QueueOffsetInfo>;
  heartbeat(group: string, data: HeartbeatRequest): Promise<MembersView>;
  unregister(group: string, clientId: string): Promise<MembersView>;
  /** The queues of `topic` that `clientId` should consume now, by its strategy. With
   * `queueIds`, over that list instead of this broker's queues of the topic: the cluster
   * router passes a topic's global ids across broker groups (docs/cluster.md). */
  assignment(
    group: string,
    clientId: string,
    topic: string,
    options?: AssignmentOptions,
  ): Promise<AssignmentView>;
  lockQueues(
    group: string,
    clientId: string,
    topic: string,
    queueIds: number[],
    unlock?: boolean,
  ): Promise<number[]>;
}

/** Administration: topics, groups, offset resets, DLQ, cron schedules, webhook
 * subscriptions, lookups and health. */
export interface AdminApi {
  upsertTopic(name: string, update: TopicUpsert): Promise<TopicConfig>;
  getTopic(name: string): Promise<TopicConfig>;
  listTopics(): Promise<TopicConfig[]>;
  deleteTopic(name: string): Promise<void>;
  upsertGroup(group: string, settings?: GroupSettings): Promise<GroupView>;
  getGroup(group: string): Promise<GroupView>;
  resetOffsetsByTime(group: string, topic: string, timestamp: number): Promise<GroupOffsets>;
  listDlq(group: string, options?: { offset?: number; max?: number }): Promise<PullResult>;
  redriveDlq(group: string, messageIds?: string[]): Promise<{ redriven: number }>;
  purgeDlq(group: string): Promise<{ purged: number }>;
  createSchedule(input: CronScheduleInput): Promise<CronScheduleView>;
  listSchedules(): Promise<CronScheduleView[]>;
  getSchedule(id: string): Promise<CronScheduleView>;
  setSchedulePaused(id: string, paused: boolean): Promise<CronScheduleView>;
  deleteSchedule(id: string): Promise<void>;
  upsertSubscription(group: string, input: SubscriptionInput): Promise<SubscriptionView>;
  /** With revealSecrets (admin), secrets in full: the cluster router copies a subscription
   * to a broker group that joins its topic (runtime/cluster/topic_join_copy.ts). */
  listSubscriptions(options?: { revealSecrets?: boolean }): Promise<SubscriptionView[]>;
  getSubscription(group: string): Promise<SubscriptionView>;
  deleteSubscription(group: string): Promise<void>;
  setSubscriptionPaused(group: string, paused: boolean): Promise<SubscriptionView>;
  replaySubscription(group: string, timestamp: number): Promise<SubscriptionView>;
  listDeliveries(
    group: string,
    query?: { messageId?: string; limit?: number },
  ): Promise<DeliveryAttempt[]>;
  getMessageById(messageId: string, topic?: string): Promise<WireMessage>;
  findMessages(topic: string, query: FindQuery): Promise<WireMessage[]>;
  health(): Promise<HealthInfo>;
}

/** Transactional messages (docs/transactions.md): a half message, then commit or rollback;
 * a producer that never decides is asked (check-back) by URL, by long poll, or through a
 * front end that holds a connection to it (TransactionCheckHost). Not part of BrokerClient:
 * the in-process core implements it, and client/transactions.ts over HTTP. */
export interface TransactionApi {
  /** Stores `message` as a half message of `producerGroup`; consumers see nothing yet. */
  beginTransaction(
    topic: string,
    message: ProduceMessage,
    producerGroup: string,
  ): Promise<TransactionBegun>;
  /** COMMIT delivers the message (original id, keys, properties); ROLLBACK drops it. The
   * same decision again answers the same view; a different one is TRANSACTION_DECIDED. */
  endTransaction(
    transactionId: string,
    decision: TransactionDecision,
    options?: { fromCheck?: boolean },
  ): Promise<TransactionView>;
  getTransaction(transactionId: string): Promise<TransactionView>;
  setTransactionCheck(group: string, input: TransactionCheckInput): Promise<TransactionCheckView>;
  getTransactionCheck(group: string): Promise<TransactionCheckView>;
  deleteTransactionCheck(group: string): Promise<void>;
  /** Every producer group's check URL, by group name; with revealSecrets (admin) the
   * secrets in full: the cluster router copies them to a group that joins a topic. */
  listTransactionChecks(options?: { revealSecrets?: boolean }): Promise<TransactionCheckView[]>;
  /** Long poll for checks of `group` (producers that cannot take inbound calls). A check is
   * answered with endTransaction(…, { fromCheck: true }); UNKNOWN is no answer. */
  pollTransactionChecks(
    group: string,
    options: TransactionPollOptions,
    signal?: SignalSource,
  ): Promise<TransactionCheck[]>;
}

/** A front end's way to reach producers of one group (gRPC Telemetry's
 * RecoverOrphanedTransactionCommand, remoting CHECK_TRANSACTION_STATE 39). */
export interface TransactionCheckChannel {
  /** Sends one check. Resolves with the producer's answer when the channel gets one in
   * reply, or undefined when the answer comes later as endTransaction (oneway, as
   * RocketMQ's). Rejects when no producer could be reached: the next channel is tried. */
  send(check: TransactionCheck): Promise<TransactionCheckAnswer | undefined>;
}

/** In-process only: where a front end registers "I can ask producers of group G". */
export interface TransactionCheckHost {
  /** Returns the unregister function; call it when the producer's connection ends. */
  registerTransactionCheckChannel(group: string, channel: TransactionCheckChannel): () => void;
}

/** Operations views for the admin CLI and the dashboard. The in-process core implements
 * them; the HTTP client reaches them through their routes (GET /v1/groups, …). */
export interface OpsApi {
  listGroups(): Promise<GroupView[]>;
  topicStats(topic: string): Promise<TopicStats>;
  groupProgress(group: string): Promise<GroupProgress>;
  clusterView(): Promise<ClusterView>;
}

/** Moving a cron schedule to another broker group (the cluster router's drain,
 * docs/cluster.md). Admin rights. Not part of BrokerClient: the Broker implements it, and
 * the broker link over HTTP (GET /v1/schedules/{id}/export, PUT /v1/schedules/{id}). */
export interface ScheduleMoveApi {
  exportSchedule(id: string): Promise<CronScheduleExport>;
  /** Creates it with its id, creation time and last tick. One here already with that id,
   * topic and cron is answered as it is (a move run again); another is SCHEDULE_EXISTS. */
  importSchedule(schedule: CronScheduleExport): Promise<CronScheduleView>;
}

/** What a single broker answers about one of its topics before a cluster router removes
 * its group from the topic's route (docs/cluster.md, Drain and remove). Admin rights. */
export interface DrainStatusApi {
  /** What is still owed on `topic` here, for its subscribers, the groups holding a position
   * in it here, and `groups` (consumer groups of the topic known elsewhere). */
  drainStatus(topic: string, groups?: string[]): Promise<DrainStatus>;
}

/** A topic's route over broker groups (docs/cluster.md). The cluster router
 * (runtime/cluster/topic_admin.ts) answers all four; a single Broker answers topicRoute()
 * for its own group (slot 0) and refuses the rest with CLUSTER_ROUTER_REQUIRED. */
export interface ClusterAdminApi {
  /** With `cached`, the router may answer its cached route (`routeCacheMs`) instead of one
   * read now: the gRPC offset and pull RPCs map queue ids per call. */
  topicRoute(topic: string, options?: { cached?: boolean }): Promise<TopicRouteView>;
  /** The group joins the topic with a new slot (the topic is created there). */
  addTopicGroup(topic: string, brokerGroup: string): Promise<TopicRouteView>;
  /** Writes stop on the group (route state draining, the topic read-only there). */
  drainTopicGroup(topic: string, brokerGroup: string): Promise<TopicRouteView>;
  /** The group leaves the topic: only once draining with no lag left, unless `force`. */
  removeTopicGroup(
    topic: string,
    brokerGroup: string,
    options?: { force?: boolean },
  ): Promise<TopicRouteView>;
}

/** All of them: what the in-process core and the HTTP client implement, and what the
 * HTTP /v1 front end is given. */
export interface BrokerClient extends ProducerApi, ConsumerApi, AdminApi, ClusterAdminApi {}

/**
 * What the RocketMQ remoting front end needs beyond the three: records in RocketMQ's own
 * byte layout (a pull answer carries them as stored), queue ranges without a group, and
 * the consumer's send-back. Implemented by the in-process core only.
 */
export interface RecordApi {
  /** As pull(), answered with the stored records; reads %RETRY% and %DLQ% topics too. No
   * offset is committed (remoting commits with its own field). */
  pullRecords(
    topic: string,
    queueId: number,
    request: PullRequest,
    signal?: SignalSource,
  ): Promise<RecordPullResult>;
  queueRange(topic: string, queueId: number): Promise<{ minOffset: number; maxOffset: number }>;
  /** The first queue offset stored at or after `timestamp` (SEARCH_OFFSET_BY_TIMESTAMP). */
  offsetByTime(topic: string, queueId: number, timestamp: number): Promise<number>;
  /** The record at a CommitLog offset, as stored; undefined when there is none. */
  recordAt(commitLogOffset: number): Promise<Uint8Array | undefined>;
  /** Records of `topic` by key (or unique id) and time range, as stored. */
  findRecords(topic: string, query: FindQuery): Promise<Uint8Array[]>;
  /** A consumer gives a message back: a copy goes to %RETRY%{group} after the delay of
   * its level, or to %DLQ%{group} past the retry limit. */
  sendBack(group: string, request: SendBackRequest): Promise<SendBackResult>;
  /** The group's live members (GET_CONSUMER_LIST_BY_GROUP), without a heartbeat. */
  groupMembers(group: string): Promise<MembersView>;
}

/** What the QStash front end (functions/qstash/) needs beyond the admin API: the keys that
 * sign its deliveries, and the SSRF guard's verdict on a destination before anything is
 * stored (a published URL is not a subscription, so upsertSubscription never checks it). */
export interface QstashApi {
  qstashSigningKeys(): Promise<QstashSigningKeys>;
  /** next becomes current, a new next is made; deliveries sign with the new current. */
  rotateQstashSigningKeys(): Promise<QstashSigningKeys>;
  /** Replaces both keys (admin): the cluster router makes every broker group sign with the
   * same ones (runtime/cluster/qstash_router.ts). */
  setQstashSigningKeys(keys: QstashSigningKeys): Promise<QstashSigningKeys>;
  /** Throws WEBHOOK_URL_REFUSED when deliveries to `url` would be refused. */
  checkDestination(url: string): Promise<void>;
  qstashSettings(): Promise<QstashSettings>;
  /** A group's dead letters, oldest first, without those deleted or retried through here. */
  listDeadLetters(group: string, max: number): Promise<WireMessage[]>;
  /** Delivers letters again to the group's subscription alone, then deletes them; the ids
   * of those found. */
  retryDeadLetters(group: string, messageIds: string[]): Promise<string[]>;
  /** Deletes single letters; how many were found. */
  deleteDeadLetters(group: string, messageIds: string[]): Promise<number>;
  /** What a cron schedule publishes (the QStash view shows its destination and body). */
  qstashSchedule(id: string): Promise<QstashScheduleDetails>;
}

/** The QStash calls of a broker the resolver gave: in this process (and in a replicated
 * group, the current master) the Broker's own; in split mode and on Deploy, that broker's
 * /v1/qstash routes over HTTP. The QStash front end applies it per request. */
export type QstashOf = (broker: BrokerClient) => QstashApi;

/** How functions/ reaches a broker: a fixed one (embedded) or one found in the KV route
 * table (split mode), re-read when a call fails. */
export interface BrokerResolver {
  get(): Promise<BrokerClient>;
  /** Told when a call failed in a way that suggests the route is stale. */
  failed(client: BrokerClient, error: unknown): void;
}
