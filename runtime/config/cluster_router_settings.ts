// Settings of the cluster router (runtime/cluster/client.ts): how the stateless functions
// pick among broker groups when a topic's queues span several (issue #26, docs/cluster.md).
// RocketMQ's producer numbers are in reference/rocketmq.md §12.
import { boolSetting, fromEnv, intSetting } from "../protocol/setting.ts";

export const CLUSTER_SEND_RETRY_TIMES = intSetting(
  "clusterSendRetryTimes",
  "MQ_CLUSTER_SEND_RETRY_TIMES",
  {
    unit: "count",
    default: 2,
    min: 0,
    max: 16,
    doc:
      "Extra attempts, each on another broker group, for a produce without shardingKey or queueId whose group failed (unreachable, not the leader, 5xx).",
    rocketmq: "retryTimesWhenSendFailed",
  },
);

export const CLUSTER_SEND_LATENCY_FAULT_ENABLE = boolSetting(
  "clusterSendLatencyFaultEnable",
  "MQ_CLUSTER_SEND_LATENCY_FAULT_ENABLE",
  {
    default: true,
    doc:
      "Round-robin produce skips a broker group whose last call failed for clusterFaultBackoffMs (when every group is in backoff, the next one is used anyway). RocketMQ has it off by default; a stateless router sees many producers' failures, so it is on here.",
    rocketmq: "sendLatencyFaultEnable",
  },
);

export const CLUSTER_FAULT_BACKOFF_MS = intSetting(
  "clusterFaultBackoffMs",
  "MQ_CLUSTER_FAULT_BACKOFF_MS",
  {
    unit: "ms",
    default: 10_000,
    min: 0,
    doc:
      "How long a failed broker group is skipped by round-robin produce and POP sweeps, unless the route shows it at a higher epoch first (a new master). RocketMQ counts an error as 10 000 ms of latency, whose notAvailableDuration is 10 000 ms.",
    rocketmq: "notAvailableDuration",
  },
);

export const CLUSTER_POP_POLL_SLICE_MS = intSetting(
  "clusterPopPollSliceMs",
  "MQ_CLUSTER_POP_POLL_SLICE_MS",
  {
    unit: "ms",
    default: 1000,
    min: 1,
    doc:
      "A POP receive that finds nothing in its sweep over the topic's groups long-polls one group (rotating) for at most this long, then sweeps again, until its waitMs is spent.",
  },
);

export const CLUSTER_AUTO_CREATE_TOPIC_ENABLE = boolSetting(
  "clusterAutoCreateTopicEnable",
  "MQ_CLUSTER_AUTO_CREATE_TOPIC",
  {
    default: true,
    doc:
      "A produce to a topic the cluster has no route for creates it over every live broker group; off, it is TOPIC_NOT_FOUND, as a single broker with autoCreateTopicEnable off answers. Set it as the brokers' MQ_AUTO_CREATE_TOPIC is set.",
    rocketmq: "autoCreateTopicEnable",
  },
);

export const CLUSTER_ROTATION_KEYS_MAX = intSetting(
  "clusterRotationKeysMax",
  "MQ_CLUSTER_ROTATION_KEYS_MAX",
  {
    unit: "count",
    default: 10_000,
    min: 1,
    doc:
      "How many (consumer group, topic) and producer-group keys the router remembers the POP and transaction-check rotation of, and how many topics its produce round robin; the least recently used is forgotten beyond it (it then starts over).",
  },
);

export const CLUSTER_PRODUCE_COALESCE_ENABLE = boolSetting(
  "clusterProduceCoalesceEnable",
  "MQ_CLUSTER_PRODUCE_COALESCE",
  {
    default: true,
    doc:
      "Single produces bound for the same broker group and topic that arrive in the same turn of the event loop go to the broker as one batch call; each caller gets its own item's answer (runtime/cluster/produce_coalescer.ts). A lone message still goes as a single produce. Off, every produce is its own call.",
  },
);

export const CLUSTER_PRODUCE_COALESCE_ITEMS_MAX = intSetting(
  "clusterProduceCoalesceItemsMax",
  "MQ_CLUSTER_PRODUCE_COALESCE_ITEMS_MAX",
  {
    unit: "count",
    default: 64,
    min: 1,
    max: 1000,
    doc:
      "Most single produces coalesced into one batch call (keep it at or below the brokers' batchItemsMax); a batch that is full goes at once.",
  },
);

export const CLUSTER_PRODUCE_COALESCE_BYTES_MAX = intSetting(
  "clusterProduceCoalesceBytesMax",
  "MQ_CLUSTER_PRODUCE_COALESCE_BYTES_MAX",
  {
    unit: "bytes",
    default: 256 * 1024,
    min: 0,
    doc:
      "Most body bytes coalesced into one batch call; a message with a larger body always goes alone (keep it well below the brokers' batchBodyBytesMax; with brokerLinkBinaryBatches off the batch carries bodies as base64 JSON, 4/3 of their size).",
  },
);

export const CLUSTER_PRODUCE_COALESCE_IN_FLIGHT_MAX = intSetting(
  "clusterProduceCoalesceInFlightMax",
  "MQ_CLUSTER_PRODUCE_COALESCE_IN_FLIGHT_MAX",
  {
    unit: "count",
    default: 1,
    min: 0,
    max: 1000,
    doc:
      "Produce calls in flight per broker group and topic before coalescing lingers: while that many are out, new single produces wait in the open batch (up to the item and byte caps, where it goes at once) until one comes back, so batches grow under load and an idle router adds no wait. 0: every turn's batch goes at once.",
  },
);

export const CLUSTER_ROUTE_CACHE_TOPICS_MAX = intSetting(
  "clusterRouteCacheTopicsMax",
  "MQ_CLUSTER_ROUTE_CACHE_TOPICS_MAX",
  {
    unit: "count",
    default: 10_000,
    min: 1,
    doc:
      "How many topics' routes the router keeps cached (each for routeCacheMs); beyond it the route read from the coordination store longest ago is forgotten and read again when next used.",
  },
);

export const CLUSTER_CHECK_RELAY_WAIT_MS = intSetting(
  "clusterCheckRelayWaitMs",
  "MQ_CLUSTER_CHECK_RELAY_WAIT_MS",
  {
    unit: "ms",
    default: 10_000,
    min: 0,
    max: 60_000,
    doc:
      "Longest wait of one long poll of the transaction-check relay: while a gRPC producer of a group holds a Telemetry stream on these functions, they poll the broker groups for its checks and send them on that stream (runtime/cluster/check_relay.ts).",
  },
);

export const CLUSTER_CHECK_RELAY_MAX = intSetting(
  "clusterCheckRelayMax",
  "MQ_CLUSTER_CHECK_RELAY_MAX",
  {
    unit: "count",
    default: 16,
    min: 1,
    max: 256,
    doc: "Most transaction checks one poll of the check relay takes.",
  },
);

export const CLUSTER_CHECK_RELAY_RETRY_MS = intSetting(
  "clusterCheckRelayRetryMs",
  "MQ_CLUSTER_CHECK_RELAY_RETRY_MS",
  {
    unit: "ms",
    default: 1000,
    min: 1,
    doc: "Pause of the check relay after a failed poll (no group reachable).",
  },
);

export const CLUSTER_ROUTER_SETTINGS = [
  CLUSTER_SEND_RETRY_TIMES,
  CLUSTER_SEND_LATENCY_FAULT_ENABLE,
  CLUSTER_FAULT_BACKOFF_MS,
  CLUSTER_POP_POLL_SLICE_MS,
  CLUSTER_AUTO_CREATE_TOPIC_ENABLE,
  CLUSTER_ROTATION_KEYS_MAX,
  CLUSTER_ROUTE_CACHE_TOPICS_MAX,
  CLUSTER_CHECK_RELAY_WAIT_MS,
  CLUSTER_CHECK_RELAY_MAX,
  CLUSTER_CHECK_RELAY_RETRY_MS,
  CLUSTER_PRODUCE_COALESCE_ENABLE,
  CLUSTER_PRODUCE_COALESCE_ITEMS_MAX,
  CLUSTER_PRODUCE_COALESCE_BYTES_MAX,
  CLUSTER_PRODUCE_COALESCE_IN_FLIGHT_MAX,
] as const;

/** The router's settings from the environment (the functions' entry files read them so:
 * `new ClusterClient(routes, topics, clusterRouterSettingsFromEnv(env))`). */
export function clusterRouterSettingsFromEnv(env: Record<string, string | undefined>) {
  return {
    clusterSendRetryTimes: fromEnv(CLUSTER_SEND_RETRY_TIMES, env),
    clusterSendLatencyFaultEnable: fromEnv(CLUSTER_SEND_LATENCY_FAULT_ENABLE, env),
    clusterFaultBackoffMs: fromEnv(CLUSTER_FAULT_BACKOFF_MS, env),
    clusterPopPollSliceMs: fromEnv(CLUSTER_POP_POLL_SLICE_MS, env),
    clusterAutoCreateTopicEnable: fromEnv(CLUSTER_AUTO_CREATE_TOPIC_ENABLE, env),
    clusterRotationKeysMax: fromEnv(CLUSTER_ROTATION_KEYS_MAX, env),
    clusterRouteCacheTopicsMax: fromEnv(CLUSTER_ROUTE_CACHE_TOPICS_MAX, env),
    clusterCheckRelayWaitMs: fromEnv(CLUSTER_CHECK_RELAY_WAIT_MS, env),
    clusterCheckRelayMax: fromEnv(CLUSTER_CHECK_RELAY_MAX, env),
    clusterCheckRelayRetryMs: fromEnv(CLUSTER_CHECK_RELAY_RETRY_MS, env),
    clusterProduceCoalesceEnable: fromEnv(CLUSTER_PRODUCE_COALESCE_ENABLE, env),
    clusterProduceCoalesceItemsMax: fromEnv(CLUSTER_PRODUCE_COALESCE_ITEMS_MAX, env),
    clusterProduceCoalesceBytesMax: fromEnv(CLUSTER_PRODUCE_COALESCE_BYTES_MAX, env),
    clusterProduceCoalesceInFlightMax: fromEnv(CLUSTER_PRODUCE_COALESCE_IN_FLIGHT_MAX, env),
  };
}
