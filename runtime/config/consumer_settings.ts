// Settings of consumption: pulls and their holds, consumer groups, POP, retries, message
// queries, the dead-letter redrive and idempotent produce.
import { intSetting } from "../protocol/setting.ts";
import {
  PULL_MSG_NUMS_MAX,
  PULL_WAIT_MS_MAX,
  QUERY_MESSAGE_NUMS_CEILING,
} from "../protocol/limits.ts";

const MIB = 1024 * 1024;
const HOUR_MS = 3_600_000;

export const CONSUMER_SETTINGS = [
  PULL_WAIT_MS_MAX,
  intSetting("pullMsgNumsDefault", "MQ_PULL_MAX_DEFAULT", {
    unit: "count",
    default: 32,
    min: 1,
    doc: "Messages per pull when the request names no `max`.",
    rocketmq: "pullBatchSize",
  }),
  PULL_MSG_NUMS_MAX,
  intSetting("pullBytesMax", "MQ_PULL_BYTES_MAX", {
    unit: "bytes",
    default: 8 * MIB,
    defaultText: "8388608 (8 MiB)",
    min: 1,
    doc: "A pull answer stops adding messages past this many bytes (the first is always sent).",
  }),
  intSetting("heldPullsMax", "MQ_HELD_PULLS_MAX", {
    unit: "count",
    default: 10_000,
    doc: "Long-polling pulls held at once; more are answered 429.",
  }),
  intSetting("consumerTimeoutMs", "MQ_CONSUMER_TIMEOUT_MS", {
    unit: "ms",
    default: 120_000,
    min: 1,
    doc: "A consumer silent this long leaves its group (clients heartbeat every 30 s).",
    rocketmq: "channelExpiredTimeout",
  }),
  intSetting("consumerExpiryScanIntervalMs", "MQ_CONSUMER_SCAN_MS", {
    unit: "ms",
    default: 5000,
    min: 1,
    doc: "Time between scans for silent consumers (a consumer leaves at most this late).",
  }),
  intSetting("queueLockTimeoutMs", "MQ_QUEUE_LOCK_TIMEOUT_MS", {
    unit: "ms",
    default: 60_000,
    min: 1,
    doc: "An ordered-consumption queue lock not renewed this long is free to another consumer.",
    rocketmq: "REBALANCE_LOCK_MAX_LIVE_TIME",
  }),
  intSetting("consumerMembersMax", "MQ_CONSUMER_MEMBERS_MAX", {
    unit: "count",
    default: 10_000,
    min: 1,
    doc: "Consumers registered at once, over all groups; more heartbeats are refused.",
  }),
  intSetting("offsetPersistIntervalMs", "MQ_OFFSET_PERSIST_MS", {
    unit: "ms",
    default: 5000,
    min: 1,
    doc: "Consumer offsets are persisted this often (and at shutdown).",
    rocketmq: "flushConsumerOffsetInterval",
  }),
  intSetting("retryMaxTimesDefault", "MQ_RETRY_MAX_TIMES", {
    unit: "count",
    default: 16,
    doc: "Deliveries of a failed message before it goes to %DLQ%, when its group names none.",
    rocketmq: "maxReconsumeTimes",
  }),
  intSetting("popMsgNumsMax", "MQ_POP_MAX", {
    unit: "count",
    default: 32,
    min: 1,
    doc: "Messages one POP receive may ask for.",
  }),
  intSetting("popInvisibleMsMin", "MQ_POP_INVISIBLE_MS_MIN", {
    unit: "ms",
    default: 10,
    min: 1,
    doc: "Shortest invisible time a POP receive may ask for.",
  }),
  intSetting("popInvisibleMsMax", "MQ_POP_INVISIBLE_MS_MAX", {
    unit: "ms",
    default: 12 * HOUR_MS,
    defaultText: "43200000 (12 h)",
    min: 1,
    doc: "Longest invisible time a POP receive may ask for.",
  }),
  intSetting("popInvisibleMsDefault", "MQ_POP_INVISIBLE_MS", {
    unit: "ms",
    default: 30_000,
    min: 1,
    doc: "Invisible time of a POP receive that names none.",
    rocketmq: "invisibleTime",
  }),
  intSetting("popReadBytesMax", "MQ_POP_READ_BYTES_MAX", {
    unit: "bytes",
    default: 4 * MIB,
    defaultText: "4194304 (4 MiB)",
    min: 1,
    doc: "Bytes a POP receive, and each step of its revive scan, reads from one queue.",
  }),
  intSetting("popReviveBatchNums", "MQ_POP_REVIVE_BATCH", {
    unit: "count",
    default: 256,
    min: 1,
    doc:
      "Revive-topic records read per step of the POP recovery scan, and due messages brought back per revive step.",
  }),
  intSetting("popInflightMax", "MQ_POP_INFLIGHT_MAX", {
    unit: "count",
    default: 200_000,
    min: 1,
    doc:
      "POP messages in flight (received, not settled) over all groups, ~200 B each; past it a receive gets only the room left, or none (it answers empty after its waitMs).",
  }),
  intSetting("popSettledHandlesMax", "MQ_POP_SETTLED_HANDLES_MAX", {
    unit: "count",
    default: 100_000,
    min: 1,
    doc:
      "Recently settled POP receipt handles remembered (~30 bytes each, in typed arrays), so a second ack is told RECEIPT_HANDLE_SETTLED or _EXPIRED rather than _UNKNOWN.",
  }),
  intSetting("queryMessageNumsDefault", "MQ_QUERY_MAX_DEFAULT", {
    unit: "count",
    default: 32,
    min: 1,
    doc: "Messages a query by key or time returns when it names no `maxNum`.",
    rocketmq: "defaultQueryMaxNum",
  }),
  intSetting("queryMessageNumsMax", "MQ_QUERY_MAX", {
    unit: "count",
    default: QUERY_MESSAGE_NUMS_CEILING,
    min: 1,
    max: QUERY_MESSAGE_NUMS_CEILING,
    doc: "Messages a query by key or time returns at most.",
    rocketmq: "maxMsgsNumBatch",
  }),
  intSetting("dlqRedriveBatchNums", "MQ_DLQ_REDRIVE_BATCH", {
    unit: "count",
    default: 256,
    min: 1,
    doc: "Dead-letter messages read per step of a redrive.",
  }),
  intSetting("dlqRedriveBatchBytes", "MQ_DLQ_REDRIVE_BATCH_BYTES", {
    unit: "bytes",
    default: 16 * MIB,
    defaultText: "16777216 (16 MiB)",
    min: 1,
    doc: "Dead-letter bytes read per step of a redrive (the first message is always read).",
  }),
  intSetting("idempotencyWindowMs", "MQ_IDEMPOTENCY_WINDOW_MS", {
    unit: "ms",
    default: 600_000,
    defaultText: "600000 (10 min)",
    min: 1,
    doc: "An Idempotency-Key repeated within this window gets the first answer.",
  }),
  intSetting("idempotencyKeysMax", "MQ_IDEMPOTENCY_KEYS_MAX", {
    unit: "count",
    default: 100_000,
    min: 1,
    doc: "Idempotency keys remembered at once; past this the oldest are forgotten first.",
  }),
] as const;
