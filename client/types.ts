// The wire types of edgemq's HTTP API, owned by the SDK so the package stands alone. The
// broker keeps its own copy (runtime/protocol/types.ts); tests/sdk_types_test.ts checks
// that each pair is mutually assignable, so a drift fails `deno check`.

export type Durability = "WRITTEN" | "FLUSHED";

/** One message to produce. Bodies are bytes here; JSON carries them as text or base64. */
export interface ProduceMessage {
  body: Uint8Array;
  contentType?: string;
  tag?: string;
  keys?: string[];
  shardingKey?: string;
  /** Explicit queue (takes precedence over shardingKey). */
  queueId?: number;
  /** RocketMQ delay level 1-18 (1s 5s 10s 30s 1m … 2h), through SCHEDULE_TOPIC_XXXX. */
  delayLevel?: number;
  /** Deliver after this many ms (timer wheel). */
  delayMs?: number;
  /** Deliver at this epoch ms (timer wheel). */
  deliverAt?: number;
  properties?: Record<string, string>;
  idempotencyKey?: string;
  /** The producer's own message id (RocketMQ 5 clients make one: reference/rocketmq-grpc.md
   * §8), stored as UNIQ_KEY; the broker makes one when absent. 1-128 visible ASCII. */
  messageId?: string;
}

export interface ProduceResult {
  messageId: string;
  topic: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  storeTimestamp: number;
  durability: Durability;
  /** Replicas known to hold the message, this broker included: set by a broker in a
   * replicated group (SYNC replication waits for inSyncReplicas; ASYNC reports 1). */
  replicas?: number;
  /** Set for a scheduled message: when it will be delivered (epoch ms). Its queueOffset is
   * -1 until then: the offset in the real queue is assigned at delivery. */
  deliverAt?: number;
  /** True when an Idempotency-Key repeat returned the first result and stored nothing. */
  idempotentReplay?: boolean;
}

export type BatchItemResult =
  | ({ ok: true } & ProduceResult)
  | {
    ok: false;
    index: number;
    error: { type: string; status: number; detail: string; code: string };
  };

export interface WireMessage {
  messageId: string;
  topic: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  body: string;
  bodyEncoding: "utf8" | "base64";
  tag?: string;
  keys?: string[];
  properties: Record<string, string>;
  bornTimestamp: number;
  storeTimestamp: number;
  reconsumeTimes: number;
  contentType?: string;
  shardingKey?: string;
}

export interface PullRequest {
  offset: number;
  max?: number;
  waitMs?: number;
  /** Tag expression: "*" or "TagA || TagB". */
  tags?: string;
  /** Commit this group's offset to nextOffset when the answer is sent. */
  group?: string;
}

export interface PullResult {
  status: "FOUND" | "NO_NEW_MESSAGE" | "NO_MATCHED_MESSAGE";
  messages: WireMessage[];
  nextOffset: number;
  minOffset: number;
  maxOffset: number;
}

export type Perm = number; // READ 4 | WRITE 2 | INHERIT 1

export interface TopicConfig {
  name: string;
  readQueueNums: number;
  writeQueueNums: number;
  perm: Perm;
  order: boolean;
}

export interface TopicUpsert {
  /** Per broker group. */
  readQueueNums?: number;
  writeQueueNums?: number;
  perm?: Perm;
  order?: boolean;
  /** Cluster router: the broker groups the topic spans (default: every live group). */
  brokerGroups?: string[];
  /** Cluster router: spread a new topic over this many groups. */
  brokerGroupCount?: number;
}

/** GET /v1/topics/{topic}/route: global queue id = slot × 1024 + the group's own id. */
export interface TopicRouteView {
  topic: string;
  brokerGroups: {
    name: string;
    url: string;
    epoch: number;
    state: "active" | "draining";
    slot: number;
  }[];
  queues: {
    queueId: number;
    brokerGroup: string;
    localQueueId: number;
    readable: boolean;
    writable: boolean;
  }[];
}

export interface QueueOffsetInfo {
  queueId: number;
  /** The group's committed offset (next message to consume); -1 when none is stored. */
  offset: number;
  minOffset: number;
  maxOffset: number;
  lag: number;
}

export interface GroupOffsets {
  group: string;
  topic: string;
  queues: QueueOffsetInfo[];
  totalLag: number;
}

export interface FindQuery {
  key?: string;
  beginTimestamp?: number;
  endTimestamp?: number;
  maxNum?: number;
}

export interface HealthInfo {
  status: "ok" | "degraded";
  brokerName: string;
  writable: boolean;
  flushDiskType: string;
  commitLogMaxOffset: number;
  runtime: string;
  scheduled?: ScheduledStats;
}

/** Delayed and timed messages: pending counts and lateness of recent deliveries (ms). */
export interface ScheduledStats {
  timersPending: number;
  timersDelivered: number;
  timerLateP50Ms: number;
  timerLateP99Ms: number;
  /** Messages waiting per delay level (index 0 = level 1). */
  delayLevelPending: number[];
  delayLevelLateP99Ms: number;
}

/** A webhook subscription: a consumer group whose consumer is an HTTP endpoint. */
export interface SubscriptionInput {
  topic: string;
  /** Tag filter expression: "*" (default) or "TagA || TagB". */
  tags?: string;
  url: string;
  /** Signing secrets (`whsec_<base64>`); every delivery is signed with each (rotation).
   * Left out on create: one is generated and returned once. */
  secrets?: string[];
  /** Extra request headers (names not starting with webhook- or mq-). */
  headers?: Record<string, string>;
  /** Per attempt; default webhookTimeoutMsDefault (15 s). */
  timeoutMs?: number;
  /** Requests in flight at once; default 16. Ordered mode: one per sharding key. */
  maxConcurrency?: number;
  /** Requests started per second; 0 (default) is no limit. */
  ratePerSec?: number;
  /** One request in flight per sharding key (per queue for messages without one);
   * a failing message is retried in place and never overtaken by a later one of its key. */
  ordered?: boolean;
  /** Deliveries after the first before a message goes to %DLQ%{group}. Default 16. */
  retryMaxTimes?: number;
  /** Delay before retry N+1 is entry N (ms); null: RocketMQ's ladder (10s 30s 1m 2m ...). */
  retryBackoffMs?: number[] | null;
  /** Where a new subscription starts: "latest" (default), "earliest" or a timestamp (ms). */
  startFrom?: "latest" | "earliest" | number;
  /** Told (best effort, signed) when a message is dead-lettered or the endpoint disabled. */
  failureCallbackUrl?: string | null;
  /** "standard" (default): Standard Webhooks signatures. "qstash": QStash's delivery
   * (Upstash-Signature JWT, per-message destination; docs/qstash.md). */
  dialect?: "standard" | "qstash";
}

export type SubscriptionStatus = "active" | "paused" | "disabled";

export interface SubscriptionStats {
  delivered: number;
  failedAttempts: number;
  retried: number;
  deadLettered: number;
  inFlight: number;
  /** Messages of the topic not yet settled, over all queues. */
  lag: number;
}

export interface SubscriptionView
  extends Required<Omit<SubscriptionInput, "startFrom" | "dialect">> {
  group: string;
  /** Set when not "standard". */
  dialect?: "qstash";
  status: SubscriptionStatus;
  /** Why it is disabled (410 from the endpoint) or paused. */
  statusReason: string | null;
  createdAt: number;
  updatedAt: number;
  stats: SubscriptionStats;
}

export type DeliveryOutcome =
  | "delivered"
  | "retry"
  | "throttled"
  | "dead-lettered"
  | "disabled";

/** One attempt to deliver one message, as the delivery log keeps it. */
export interface DeliveryAttempt {
  group: string;
  messageId: string;
  topic: string;
  queueId: number;
  queueOffset: number;
  /** 1 for the first delivery. */
  attempt: number;
  at: number;
  /** HTTP status, or 0 when there was no response (timeout, connection error, refused). */
  status: number;
  outcome: DeliveryOutcome;
  error?: string;
  latencyMs: number;
  /** The first bytes of the response body (webhookLogResponseBytes). */
  response?: string;
}

/**
 * The client's abort signal, or a function that gets it. A held pull or receive needs the
 * signal only when it has to wait: on Deno, merely reading a served Request's `signal`
 * costs a large share of a one-message pull's CPU (legacy behaviour aborts it, with a
 * DOMException, once the answer is sent; bench/README.md has the figures). So the routes
 * pass a getter.
 */
export type SignalSource = AbortSignal | (() => AbortSignal);

export interface CronScheduleInput {
  topic: string;
  cron: string;
  /** IANA time zone; default UTC. */
  timeZone?: string;
  message: ProduceMessage;
  /** Ticks missed while the broker was down: "skip" (default) or "fire_once". */
  missedTicks?: "skip" | "fire_once";
  paused?: boolean;
}

export interface CronScheduleView {
  id: string;
  topic: string;
  cron: string;
  timeZone: string;
  paused: boolean;
  missedTicks: "skip" | "fire_once";
  lastTickAt: number | null;
  nextTickAt: number | null;
}

export interface ScheduledOutcome {
  messageId: string;
  status: "CANCELLED" | "RESCHEDULED";
  deliverAt?: number;
}

/** A message received by POP: settle it with its receipt handle before invisibleUntil. */
export interface PopMessage extends WireMessage {
  receiptHandle: string;
  invisibleUntil: number;
}

export interface ReceiveOptions {
  topic: string;
  /** Required for broadcasting groups (each client keeps offsets of its own). */
  clientId?: string;
  max?: number;
  invisibleMs?: number;
  waitMs?: number;
}

/** Consumer group settings (RocketMQ's SubscriptionGroupConfig and consumer defaults). */
export interface GroupSettings {
  messageModel?: "CLUSTERING" | "BROADCASTING";
  consumeFromWhere?: "LAST_OFFSET" | "FIRST_OFFSET" | "TIMESTAMP";
  consumeTimestampMs?: number | null;
  /** Deliveries after which a message goes to %DLQ%group (maxReconsumeTimes). 16. */
  retryMaxTimes?: number;
  /** Delay before retry N+1 is entry N (ms); null: the delay levels 3 + reconsumeTimes. */
  retryBackoffMs?: number[] | null;
  orderly?: boolean;
}

export interface GroupView extends Required<GroupSettings> {
  group: string;
}

export interface MembersView {
  group: string;
  /** Changes whenever the group's membership changes (rebalance epoch). */
  generation: number;
  members: string[];
}

export interface AssignmentView {
  group: string;
  clientId: string;
  topic: string;
  generation: number;
  queueIds: number[];
}

/** Allocate over these queue ids (a topic's global ids across broker groups). */
export interface AssignmentOptions {
  queueIds?: number[];
  /** With queueIds: the broker group of each slot (queue id / 1024), for machine rooms. */
  slotBrokers?: string[];
}

export interface HeartbeatRequest {
  clientId: string;
  subscriptions: { topic: string; tags?: string }[];
  /** RocketMQ's allocation strategy name; AVG by default. */
  strategy?:
    | "AVG"
    | "AVG_BY_CIRCLE"
    | "CONSISTENT_HASH"
    | "CONFIG"
    | "MACHINE_ROOM"
    | "MACHINE_ROOM_NEARBY";
  room?: string;
  configQueues?: number[];
}

export type AckResult =
  | { receiptHandle: string; ok: true }
  | {
    receiptHandle: string;
    ok: false;
    error: { type: string; status: number; detail: string; code: string };
  };
