// The wire types of runtime/protocol/types.ts as zod schemas, for the OpenAPI document's
// responses. Named schemas become components ($ref). The type checks at the end fail the
// build when a schema and its wire type drift apart.
import { z } from "@hono/zod-openapi";
import type * as wire from "../../runtime/protocol/types.ts";
import type { HaStatus as HaStatusType } from "../../runtime/protocol/ha_api.ts";

export const Problem = z.object({
  type: z.string().openapi({ example: "/problems/topic-not-found" }),
  title: z.string(),
  status: z.int(),
  detail: z.string(),
  code: z.string().openapi({ example: "TOPIC_NOT_FOUND" }),
}).catchall(z.unknown()).openapi("Problem", {
  description: "RFC 9457 problem; `type` is fixed forever by `code`",
});

const ItemError = z.object({
  type: z.string(),
  status: z.int(),
  detail: z.string(),
  code: z.string(),
});

export const ProduceResult = z.object({
  messageId: z.string(),
  topic: z.string(),
  queueId: z.int(),
  queueOffset: z.int().openapi({ description: "-1 for a scheduled message until delivery" }),
  commitLogOffset: z.int(),
  storeTimestamp: z.int(),
  durability: z.enum(["WRITTEN", "FLUSHED"]),
  replicas: z.int().optional(),
  deliverAt: z.int().optional(),
  idempotentReplay: z.boolean().optional(),
  transactionId: z.string().optional().openapi({
    description: "Set for Mq-Transaction: begin (equals messageId)",
  }),
}).openapi("ProduceResult");

export const BatchItemResult = z.union([
  ProduceResult.extend({ ok: z.literal(true) }),
  z.object({ ok: z.literal(false), index: z.int(), error: ItemError }),
]).openapi("BatchItemResult");

export const BatchResult = z.object({
  results: z.array(BatchItemResult),
  succeeded: z.int(),
  failed: z.int(),
}).openapi("BatchResult");

export const Message = z.object({
  messageId: z.string(),
  topic: z.string(),
  queueId: z.int(),
  queueOffset: z.int(),
  commitLogOffset: z.int(),
  body: z.string(),
  bodyEncoding: z.enum(["utf8", "base64"]),
  tag: z.string().optional(),
  keys: z.array(z.string()).optional(),
  properties: z.record(z.string(), z.string()),
  bornTimestamp: z.int(),
  storeTimestamp: z.int(),
  reconsumeTimes: z.int(),
  contentType: z.string().optional(),
  shardingKey: z.string().optional(),
}).openapi("Message");

export const Messages = z.object({ messages: z.array(Message) }).openapi("Messages");

export const PullResult = z.object({
  status: z.enum(["FOUND", "NO_NEW_MESSAGE", "NO_MATCHED_MESSAGE"]),
  messages: z.array(Message),
  nextOffset: z.int(),
  minOffset: z.int(),
  maxOffset: z.int(),
}).openapi("PullResult");

export const PopMessage = Message.extend({
  receiptHandle: z.string(),
  invisibleUntil: z.int(),
}).openapi("PopMessage");

export const TopicConfig = z.object({
  name: z.string(),
  readQueueNums: z.int(),
  writeQueueNums: z.int(),
  perm: z.int().openapi({ description: "READ 4 | WRITE 2 | INHERIT 1" }),
  order: z.boolean(),
}).openapi("TopicConfig");

export const QueueOffsetInfo = z.object({
  queueId: z.int(),
  offset: z.int().openapi({ description: "Committed offset; -1 when none is stored" }),
  minOffset: z.int(),
  maxOffset: z.int(),
  lag: z.int(),
}).openapi("QueueOffsetInfo");

export const GroupOffsets = z.object({
  group: z.string(),
  topic: z.string(),
  queues: z.array(QueueOffsetInfo),
  totalLag: z.int(),
}).openapi("GroupOffsets");

export const GroupView = z.object({
  group: z.string(),
  messageModel: z.enum(["CLUSTERING", "BROADCASTING"]),
  consumeFromWhere: z.enum(["LAST_OFFSET", "FIRST_OFFSET", "TIMESTAMP"]),
  consumeTimestampMs: z.int().nullable(),
  retryMaxTimes: z.int(),
  retryBackoffMs: z.array(z.int()).nullable(),
  orderly: z.boolean(),
}).openapi("GroupView");

export const MembersView = z.object({
  group: z.string(),
  generation: z.int(),
  members: z.array(z.string()),
}).openapi("MembersView");

export const AssignmentView = z.object({
  group: z.string(),
  clientId: z.string(),
  topic: z.string(),
  generation: z.int(),
  queueIds: z.array(z.int()),
}).openapi("AssignmentView");

export const AckResult = z.union([
  z.object({ receiptHandle: z.string(), ok: z.literal(true) }),
  z.object({ receiptHandle: z.string(), ok: z.literal(false), error: ItemError }),
]).openapi("AckResult");

export const Settled = z.object({
  receiptHandle: z.string(),
  status: z.enum(["ACKED", "NACKED"]),
}).openapi("Settled");

export const InvisibleUntil = z.object({
  receiptHandle: z.string(),
  invisibleUntil: z.int(),
}).openapi("InvisibleUntil");

export const ScheduledOutcome = z.object({
  messageId: z.string(),
  status: z.enum(["CANCELLED", "RESCHEDULED"]),
  deliverAt: z.int().optional(),
}).openapi("ScheduledOutcome");

export const CronScheduleView = z.object({
  id: z.string(),
  topic: z.string(),
  cron: z.string(),
  timeZone: z.string(),
  paused: z.boolean(),
  missedTicks: z.enum(["skip", "fire_once"]),
  lastTickAt: z.int().nullable(),
  nextTickAt: z.int().nullable(),
}).openapi("CronSchedule");

export const SubscriptionView = z.object({
  group: z.string(),
  topic: z.string(),
  tags: z.string(),
  url: z.string(),
  secrets: z.array(z.string()),
  headers: z.record(z.string(), z.string()),
  timeoutMs: z.int(),
  maxConcurrency: z.int(),
  ratePerSec: z.number(),
  ordered: z.boolean(),
  retryMaxTimes: z.int(),
  retryBackoffMs: z.array(z.int()).nullable(),
  failureCallbackUrl: z.string().nullable(),
  dialect: z.literal("qstash").optional(),
  status: z.enum(["active", "paused", "disabled"]),
  statusReason: z.string().nullable(),
  createdAt: z.int(),
  updatedAt: z.int(),
  stats: z.object({
    delivered: z.int(),
    failedAttempts: z.int(),
    retried: z.int(),
    deadLettered: z.int(),
    inFlight: z.int(),
    lag: z.int(),
  }),
}).openapi("Subscription");

export const DeliveryAttempt = z.object({
  group: z.string(),
  messageId: z.string(),
  topic: z.string(),
  queueId: z.int(),
  queueOffset: z.int(),
  attempt: z.int(),
  at: z.int(),
  status: z.int().openapi({ description: "HTTP status; 0 when there was no response" }),
  outcome: z.enum(["delivered", "retry", "throttled", "dead-lettered", "disabled"]),
  error: z.string().optional(),
  latencyMs: z.number(),
  response: z.string().optional(),
}).openapi("DeliveryAttempt");

export const HealthInfo = z.object({
  status: z.enum(["ok", "degraded"]),
  brokerName: z.string(),
  writable: z.boolean(),
  flushDiskType: z.string(),
  commitLogMaxOffset: z.int(),
  runtime: z.string(),
  scheduled: z.object({
    timersPending: z.int(),
    timersDelivered: z.int(),
    timerLateP50Ms: z.number(),
    timerLateP99Ms: z.number(),
    delayLevelPending: z.array(z.int()),
    delayLevelLateP99Ms: z.number(),
  }).optional(),
}).openapi("Health");

export const HaStatus = z.object({
  role: z.enum(["starting", "slave", "master", "changing", "stopped"]),
  brokerId: z.int(),
  brokerGroup: z.string(),
  epoch: z.int(),
  maxOffset: z.int(),
  master: z.object({ brokerId: z.int(), httpAddress: z.string(), epoch: z.int() }).nullable(),
  slave: z.object({
    state: z.string(),
    heldOffset: z.int(),
    masterMaxOffset: z.int(),
    inSync: z.boolean(),
  }).optional(),
  replicas: z.array(z.object({ brokerId: z.int(), ackedOffset: z.int(), inSync: z.boolean() }))
    .optional(),
}).openapi("HaStatus");

/** True when A and B are each assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Out<S extends z.ZodType> = z.infer<S>;
// Each line fails to compile when a schema no longer describes its wire type.
export type WireSchemasMatch = [
  Same<Out<typeof ProduceResult>, wire.ProduceResult>,
  Same<Out<typeof BatchItemResult>, wire.BatchItemResult>,
  Same<Out<typeof Message>, wire.WireMessage>,
  Same<Out<typeof PullResult>, wire.PullResult>,
  Same<Out<typeof PopMessage>, wire.PopMessage>,
  Same<Out<typeof TopicConfig>, wire.TopicConfig>,
  Same<Out<typeof QueueOffsetInfo>, wire.QueueOffsetInfo>,
  Same<Out<typeof GroupOffsets>, wire.GroupOffsets>,
  Same<Out<typeof GroupView>, wire.GroupView>,
  Same<Out<typeof MembersView>, wire.MembersView>,
  Same<Out<typeof AssignmentView>, wire.AssignmentView>,
  Same<Out<typeof AckResult>, wire.AckResult>,
  Same<Out<typeof ScheduledOutcome>, wire.ScheduledOutcome>,
  Same<Out<typeof CronScheduleView>, wire.CronScheduleView>,
  Same<Out<typeof SubscriptionView>, wire.SubscriptionView>,
  Same<Out<typeof DeliveryAttempt>, wire.DeliveryAttempt>,
  Same<Out<typeof HealthInfo>, wire.HealthInfo>,
  Same<Out<typeof HaStatus>, HaStatusType>,
];
const matches: WireSchemasMatch = [
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
];
void matches;
