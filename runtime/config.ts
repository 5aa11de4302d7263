// Broker settings: every limit named, with unit, default and reason. One table serves
// the parser (config file, then environment, then flags; later wins) and `--help`.
// Only main.ts reads the environment; everything else receives a BrokerConfig.
import { defaultStoreConfig, type FlushDiskType, type StoreConfig } from "../storage/config.ts";

import type { ApiKeyConfig } from "./protocol/types.ts";
export type { ApiKeyConfig };

export interface BrokerConfig {
  brokerName: string;
  brokerClusterName: string;
  /** HTTP listen address and port (0 picks a free port). */
  host: string;
  port: number;
  /** Address other processes use to reach this broker (route table). */
  advertisedAddress: string;
  dataDir: string;
  store: StoreConfig;
  autoCreateTopicEnable: boolean;
  defaultTopicQueueNums: number;
  /** Largest accepted queue count for a topic. */
  topicQueueNumsMax: number;
  /** Longest a pull may be held, ms (BROKER_SUSPEND_MAX_TIME_MILLIS). */
  pullWaitMsMax: number;
  pullMsgNumsDefault: number;
  pullMsgNumsMax: number;
  /** A pull answer stops adding messages past this many bytes (the first is always taken). */
  pullBytesMax: number;
  /** Pulls held at once; more are answered 429. */
  heldPullsMax: number;
  /** An Idempotency-Key repeat within this window returns the first result, ms. */
  idempotencyWindowMs: number;
  /** Keys remembered at once; the oldest are forgotten first past this. */
  idempotencyKeysMax: number;
  idempotencyKeyBytesMax: number;
  /** Largest batch produce request body, bytes. */
  batchBodyBytesMax: number;
  batchItemsMax: number;
  /** A request body must arrive within this time, ms (slow-body defence). */
  bodyReadTimeoutMs: number;
  /** User properties per message (Mq-Prop-* headers or `properties`). */
  userPropertiesMax: number;
  apiKeys: ApiKeyConfig[];
  /** Local KV file path (single process) or a KV Connect URL (several processes). */
  kvPath: string;
  kvAccessToken: string;
  routeHeartbeatMs: number;
  routeExpiryMs: number;
  offsetPersistIntervalMs: number;
  /** Delay-level progress (delayOffset.json) persisted every, ms (flushDelayOffsetInterval). */
  flushDelayOffsetIntervalMs: number;
  /** Timer wheel precision, ms: a timer fires at most this much after its time. */
  timerPrecisionMs: number;
  /** Latest accepted delivery time, ms from now (RocketMQ: 3 days). */
  timerHorizonMs: number;
  /** Longest a timer waits on one CommitLog record before it is copied forward, ms; below
   * fileReservedTime so a far timer's message is never deleted under it. */
  timerRollWindowMs: number;
  timerCheckpointIntervalMs: number;
  /** A consumer silent this long leaves its group (heartbeats every 30 s), ms. */
  consumerTimeoutMs: number;
  /** Messages per POP receive, at most. */
  popMsgNumsMax: number;
  /** POP invisible time bounds, ms. */
  popInvisibleMsMin: number;
  popInvisibleMsMax: number;
  popInvisibleMsDefault: number;
  /** Cron schedules at once. */
  cronSchedulesMax: number;
  /** Webhook hosts exempt from the SSRF address check (names, IPs or CIDRs, comma-separated
   * in the environment); they may also use http and any port. */
  webhookAllowHosts: string[];
  /** Allow http: webhook URLs for every host (https only otherwise). */
  webhookAllowHttp: boolean;
  webhookSubscriptionsMax: number;
  /** Per-attempt timeout when a subscription names none, and the largest it may name, ms. */
  webhookTimeoutMsDefault: number;
  webhookTimeoutMsMax: number;
  /** Requests in flight per subscription when it names none, and the largest it may name. */
  webhookConcurrencyDefault: number;
  webhookConcurrencyMax: number;
  /** Messages read ahead per queue of a subscription (bounds memory while one key is stuck). */
  webhookReadAheadPerQueue: number;
  /** Longest Retry-After honoured, ms; longer asks are cut to this. */
  webhookRetryAfterMaxMs: number;
  /** Delivery attempts kept per subscription for the delivery log (memory only). */
  webhookLogEntriesMax: number;
  /** Response bytes kept per attempt in the delivery log. */
  webhookLogResponseBytes: number;
  /** Graceful shutdown waits this long for deliveries in flight, then aborts them, ms. */
  webhookShutdownGraceMs: number;
  /** Graceful shutdown gives held requests and flushes this long, ms. */
  shutdownGraceMs: number;
  logLevel: "debug" | "info" | "warn" | "error";
  /** "none": a broker on its own. "cluster": one replica of the group brokerName, master
   * or slave by the lease in KV (kvPath must then be a KV Connect URL shared by all). */
  haMode: "none" | "cluster";
  /** RocketMQ's brokerId: unique within the group. */
  brokerId: number;
  /** Replication listener (TCP) address and port; 0 picks a free port. */
  haHost: string;
  haPort: number;
  /** Host others reach this broker's replication port at; default haHost. */
  haAdvertisedHost: string;
  /** ASYNC: answer after local durability. SYNC: answer after inSyncReplicas hold it. */
  replicationMode: "ASYNC" | "SYNC";
  /** Replicas, the master included, that must hold a message before a SYNC answer. */
  inSyncReplicas: number;
  /** Lease TTL and clock-skew margin, ms (runtime/ha/lease_rules.ts). */
  leaseTtlMs: number;
  leaseSafetyMarginMs: number;
  /** Longest a SYNC produce waits for replicas (slaveTimeout), ms. */
  haSlaveTimeoutMs: number;
  /** Replication heartbeat and silence limit (haSendHeartbeatInterval,
   * haHousekeepingInterval), ms. */
  haHeartbeatIntervalMs: number;
  haHousekeepingIntervalMs: number;
  /** A slave further behind than this is out of sync (haMaxGapNotInSync), bytes. */
  haMaxGapNotInSync: number;
  /** Slaves copy the master's metadata (topics, groups, offsets, subscriptions) this
   * often, ms (RocketMQ's SlaveSynchronize). */
  haMetadataSyncIntervalMs: number;
}

type Kind = "string" | "int" | "bool" | "json" | "list";

interface Setting {
  path: string;
  env: string;
  flag: string;
  kind: Kind;
  doc: string;
}

/** Every setting a user can change. `path` is the key in the config file (dots for store.*). */
export const SETTINGS: Setting[] = [
  s("port", "PORT", "int", "HTTP port (0 = any free port). Default 8080."),
  s("host", "HOST", "string", "HTTP listen address. Default 127.0.0.1."),
  s(
    "advertisedAddress",
    "MQ_ADVERTISED_ADDRESS",
    "string",
    "host:port others use to reach this broker. Default host:port.",
  ),
  s(
    "dataDir",
    "DATA_DIR",
    "string",
    "Data folder (CommitLog, queues, index, metadata, KV). Default ./data.",
  ),
  s("brokerName", "MQ_BROKER_NAME", "string", "Broker group name. Default broker-a."),
  s("brokerClusterName", "MQ_CLUSTER", "string", "Cluster name. Default DefaultCluster."),
  s(
    "store.flushDiskType",
    "MQ_FLUSH_DISK_TYPE",
    "string",
    "SYNC_FLUSH (ack after fdatasync, group commit) or ASYNC_FLUSH (ack after write; sync every flushIntervalCommitLog). Default ASYNC_FLUSH.",
  ),
  s(
    "store.mappedFileSizeCommitLog",
    "MQ_SEGMENT_BYTES",
    "int",
    "CommitLog segment size, bytes. Default 1 GiB.",
  ),
  s(
    "store.maxMessageSize",
    "MQ_MAX_MESSAGE_SIZE",
    "int",
    "Largest message body, bytes. Default 4 MiB.",
  ),
  s(
    "store.flushIntervalCommitLog",
    "MQ_FLUSH_INTERVAL_MS",
    "int",
    "ASYNC_FLUSH sync interval, ms. Default 500.",
  ),
  s(
    "store.syncFlushTimeout",
    "MQ_SYNC_FLUSH_TIMEOUT_MS",
    "int",
    "SYNC_FLUSH: fail with flush-timeout after, ms. Default 5000.",
  ),
  s(
    "store.fileReservedTime",
    "MQ_FILE_RESERVED_HOURS",
    "int",
    "Keep CommitLog segments this many hours. Default 72.",
  ),
  s(
    "store.deleteWhen",
    "MQ_DELETE_WHEN",
    "string",
    "Hours (local, ';'-separated) to delete expired files. Default 04.",
  ),
  s(
    "store.diskMaxUsedSpaceRatio",
    "MQ_DISK_MAX_USED_RATIO",
    "int",
    "Delete expired files at any hour above this disk use, %. Default 75.",
  ),
  s(
    "store.commitLogTailCacheBytes",
    "MQ_COMMIT_LOG_TAIL_CACHE_BYTES",
    "int",
    "Newest CommitLog bytes kept in memory for reads at the tail, bytes; 0 turns it off. Default 16 MiB.",
  ),
  s(
    "store.segmentZeroFill",
    "MQ_SEGMENT_ZERO_FILL",
    "bool",
    "Zero-fill new segments ahead of use (faster fdatasync). Default: true under SYNC_FLUSH, false under ASYNC_FLUSH.",
  ),
  s(
    "autoCreateTopicEnable",
    "MQ_AUTO_CREATE_TOPIC",
    "bool",
    "Create a topic on first produce. Default true (local default).",
  ),
  s(
    "defaultTopicQueueNums",
    "MQ_DEFAULT_TOPIC_QUEUES",
    "int",
    "Queues of an auto-created topic. Default 8.",
  ),
  s(
    "topicQueueNumsMax",
    "MQ_TOPIC_QUEUES_MAX",
    "int",
    "Largest queue count per topic. Default 1024.",
  ),
  s("pullWaitMsMax", "MQ_PULL_WAIT_MS_MAX", "int", "Longest long-poll hold, ms. Default 15000."),
  s(
    "pullMsgNumsDefault",
    "MQ_PULL_MAX_DEFAULT",
    "int",
    "Messages per pull when `max` is absent. Default 32.",
  ),
  s("pullMsgNumsMax", "MQ_PULL_MAX", "int", "Largest `max` per pull. Default 1000."),
  s(
    "pullBytesMax",
    "MQ_PULL_BYTES_MAX",
    "int",
    "Bytes per pull answer (first message always sent). Default 8 MiB.",
  ),
  s(
    "heldPullsMax",
    "MQ_HELD_PULLS_MAX",
    "int",
    "Long polls held at once; more get 429. Default 10000.",
  ),
  s(
    "idempotencyWindowMs",
    "MQ_IDEMPOTENCY_WINDOW_MS",
    "int",
    "Idempotency-Key replay window, ms. Default 600000 (10 min).",
  ),
  s(
    "idempotencyKeysMax",
    "MQ_IDEMPOTENCY_KEYS_MAX",
    "int",
    "Idempotency keys remembered at once. Default 100000.",
  ),
  s(
    "batchBodyBytesMax",
    "MQ_BATCH_BODY_BYTES_MAX",
    "int",
    "Largest batch request body, bytes. Default 16 MiB.",
  ),
  s("batchItemsMax", "MQ_BATCH_ITEMS_MAX", "int", "Messages per batch request. Default 1000."),
  s(
    "bodyReadTimeoutMs",
    "MQ_BODY_READ_TIMEOUT_MS",
    "int",
    "A request body must arrive within, ms. Default 10000.",
  ),
  s(
    "apiKeys",
    "MQ_API_KEYS",
    "json",
    "JSON list of {key,name,publish[],subscribe[],admin}. Empty = open (logs a warning).",
  ),
  s(
    "kvPath",
    "MQ_KV",
    "string",
    "KV: local file path, or KV Connect URL for several processes. Default <dataDir>/kv.sqlite.",
  ),
  s("kvAccessToken", "DENO_KV_ACCESS_TOKEN", "string", "Token for a KV Connect URL."),
  s(
    "routeHeartbeatMs",
    "MQ_ROUTE_HEARTBEAT_MS",
    "int",
    "Route registration interval, ms. Default 30000.",
  ),
  s(
    "routeExpiryMs",
    "MQ_ROUTE_EXPIRY_MS",
    "int",
    "Routes unseen this long are dropped, ms. Default 120000.",
  ),
  s(
    "offsetPersistIntervalMs",
    "MQ_OFFSET_PERSIST_MS",
    "int",
    "Consumer offsets persisted every, ms. Default 5000.",
  ),
  s(
    "flushDelayOffsetIntervalMs",
    "MQ_DELAY_OFFSET_PERSIST_MS",
    "int",
    "Delay-level progress persisted every, ms. Default 10000.",
  ),
  s("timerPrecisionMs", "MQ_TIMER_PRECISION_MS", "int", "Timer precision, ms. Default 10."),
  s(
    "timerHorizonMs",
    "MQ_TIMER_HORIZON_MS",
    "int",
    "Latest accepted delivery, ms from now. Default 365 days.",
  ),
  s(
    "timerRollWindowMs",
    "MQ_TIMER_ROLL_WINDOW_MS",
    "int",
    "A timer's message is copied forward after this long, ms. Default 24 h.",
  ),
  s(
    "store.messageDelayLevel",
    "MQ_DELAY_LEVELS",
    "string",
    "Delay levels. Default 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.",
  ),
  s(
    "shutdownGraceMs",
    "MQ_SHUTDOWN_GRACE_MS",
    "int",
    "Graceful shutdown budget, ms. Default 10000.",
  ),
  s("logLevel", "MQ_LOG_LEVEL", "string", "debug, info, warn or error. Default info."),
  s(
    "webhookAllowHosts",
    "MQ_WEBHOOK_ALLOW_HOSTS",
    "list",
    "Webhook hosts exempt from the SSRF guard (names, IPs, CIDRs; comma-separated); they may use http and any port. Default none.",
  ),
  s(
    "webhookAllowHttp",
    "MQ_WEBHOOK_ALLOW_HTTP",
    "bool",
    "Allow http: webhook URLs to any public host. Default false (https only).",
  ),
  s(
    "webhookSubscriptionsMax",
    "MQ_WEBHOOK_SUBSCRIPTIONS_MAX",
    "int",
    "Webhook subscriptions at once. Default 1000.",
  ),
  s(
    "webhookTimeoutMsDefault",
    "MQ_WEBHOOK_TIMEOUT_MS",
    "int",
    "Webhook attempt timeout when a subscription names none, ms. Default 15000.",
  ),
  s(
    "webhookTimeoutMsMax",
    "MQ_WEBHOOK_TIMEOUT_MS_MAX",
    "int",
    "Largest webhook timeout a subscription may name, ms. Default 60000.",
  ),
  s(
    "webhookConcurrencyDefault",
    "MQ_WEBHOOK_CONCURRENCY",
    "int",
    "Webhook requests in flight per subscription when it names none. Default 16.",
  ),
  s(
    "webhookConcurrencyMax",
    "MQ_WEBHOOK_CONCURRENCY_MAX",
    "int",
    "Largest maxConcurrency a subscription may name. Default 256.",
  ),
  s(
    "webhookReadAheadPerQueue",
    "MQ_WEBHOOK_READ_AHEAD",
    "int",
    "Messages read ahead per queue of a subscription. Default 256.",
  ),
  s(
    "webhookRetryAfterMaxMs",
    "MQ_WEBHOOK_RETRY_AFTER_MAX_MS",
    "int",
    "Longest Retry-After honoured, ms. Default 3600000 (1 h).",
  ),
  s(
    "webhookLogEntriesMax",
    "MQ_WEBHOOK_LOG_ENTRIES",
    "int",
    "Delivery attempts kept per subscription (memory). Default 1000.",
  ),
  s(
    "webhookLogResponseBytes",
    "MQ_WEBHOOK_LOG_RESPONSE_BYTES",
    "int",
    "Response bytes kept per attempt in the delivery log. Default 256.",
  ),
  s(
    "webhookShutdownGraceMs",
    "MQ_WEBHOOK_SHUTDOWN_GRACE_MS",
    "int",
    "Shutdown waits this long for deliveries in flight, then aborts them, ms. Default 3000.",
  ),
];

SETTINGS.push(
  s(
    "haMode",
    "MQ_HA_MODE",
    "string",
    "none (a broker on its own) or cluster (a replica of brokerName, leader by KV lease). Default none.",
  ),
  s("brokerId", "MQ_BROKER_ID", "int", "Replica id, unique within the group. Default 0."),
  s("haHost", "MQ_HA_HOST", "string", "Replication listen address. Default 127.0.0.1."),
  s("haPort", "MQ_HA_PORT", "int", "Replication port (0 = any free port). Default 0."),
  s(
    "haAdvertisedHost",
    "MQ_HA_ADVERTISED_HOST",
    "string",
    "Host peers reach the replication port at. Default haHost.",
  ),
  s(
    "replicationMode",
    "MQ_REPLICATION_MODE",
    "string",
    "ASYNC (answer after local durability) or SYNC (after inSyncReplicas hold it). Default ASYNC.",
  ),
  s(
    "inSyncReplicas",
    "MQ_IN_SYNC_REPLICAS",
    "int",
    "Replicas (master included) a SYNC produce waits for. Default 2.",
  ),
  s("leaseTtlMs", "MQ_LEASE_TTL_MS", "int", "Leadership lease TTL, ms. Default 10000."),
  s(
    "leaseSafetyMarginMs",
    "MQ_LEASE_MARGIN_MS",
    "int",
    "Clock-skew margin: a master steps down this long before its lease ends, ms. Default 2000.",
  ),
  s(
    "haSlaveTimeoutMs",
    "MQ_HA_SLAVE_TIMEOUT_MS",
    "int",
    "Longest a SYNC produce waits for replicas, then 504 replication-timeout, ms. Default 3000.",
  ),
  s(
    "haHeartbeatIntervalMs",
    "MQ_HA_HEARTBEAT_MS",
    "int",
    "Replication heartbeat when idle, ms. Default 5000.",
  ),
  s(
    "haHousekeepingIntervalMs",
    "MQ_HA_HOUSEKEEPING_MS",
    "int",
    "A silent replication peer is dropped after, ms. Default 20000.",
  ),
  s(
    "haMaxGapNotInSync",
    "MQ_HA_MAX_GAP",
    "int",
    "A slave further behind is out of sync, bytes. Default 268435456 (256 MiB).",
  ),
  s(
    "haMetadataSyncIntervalMs",
    "MQ_HA_METADATA_SYNC_MS",
    "int",
    "Slaves copy topics, groups, offsets and subscriptions from the master every, ms. Default 3000.",
  ),
);

function s(path: string, env: string, kind: Kind, doc: string): Setting {
  const flag = "--" + path.replace(/^store\./, "").replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
  return { path, env, flag, kind, doc };
}

export function defaultBrokerConfig(dataDir = "./data"): BrokerConfig {
  return {
    brokerName: "broker-a",
    brokerClusterName: "DefaultCluster",
    host: "127.0.0.1",
    port: 8080,
    advertisedAddress: "",
    dataDir,
    store: defaultStoreConfig(`${dataDir}/store`),
    autoCreateTopicEnable: true,
    defaultTopicQueueNums: 8,
    topicQueueNumsMax: 1024,
    pullWaitMsMax: 15_000,
    pullMsgNumsDefault: 32,
    pullMsgNumsMax: 1000,
    pullBytesMax: 8 * 1024 * 1024,
    heldPullsMax: 10_000,
    idempotencyWindowMs: 600_000,
    idempotencyKeysMax: 100_000,
    idempotencyKeyBytesMax: 256,
    batchBodyBytesMax: 16 * 1024 * 1024,
    batchItemsMax: 1000,
    bodyReadTimeoutMs: 10_000,
    userPropertiesMax: 64,
    apiKeys: [],
    kvPath: "",
    kvAccessToken: "",
    routeHeartbeatMs: 30_000,
    routeExpiryMs: 120_000,
    offsetPersistIntervalMs: 5000,
    flushDelayOffsetIntervalMs: 10_000,
    cronSchedulesMax: 1000,
    webhookAllowHosts: [],
    webhookAllowHttp: false,
    webhookSubscriptionsMax: 1000,
    webhookTimeoutMsDefault: 15_000,
    webhookTimeoutMsMax: 60_000,
    webhookConcurrencyDefault: 16,
    webhookConcurrencyMax: 256,
    webhookReadAheadPerQueue: 256,
    webhookRetryAfterMaxMs: 3_600_000,
    webhookLogEntriesMax: 1000,
    webhookLogResponseBytes: 256,
    webhookShutdownGraceMs: 3000,
    consumerTimeoutMs: 120_000,
    popMsgNumsMax: 32,
    popInvisibleMsMin: 10,
    popInvisibleMsMax: 12 * 3_600_000,
    popInvisibleMsDefault: 30_000,
    timerPrecisionMs: 10,
    timerHorizonMs: 365 * 86_400_000,
    timerRollWindowMs: 24 * 3_600_000,
    timerCheckpointIntervalMs: 1000,
    shutdownGraceMs: 10_000,
    logLevel: "info",
    haMode: "none",
    brokerId: 0,
    haHost: "127.0.0.1",
    haPort: 0,
    haAdvertisedHost: "",
    replicationMode: "ASYNC",
    inSyncReplicas: 2,
    leaseTtlMs: 10_000,
    leaseSafetyMarginMs: 2_000,
    haSlaveTimeoutMs: 3000,
    haHeartbeatIntervalMs: 5000,
    haHousekeepingIntervalMs: 20_000,
    haMaxGapNotInSync: 256 * 1024 * 1024,
    haMetadataSyncIntervalMs: 3000,
  };
}

export class ConfigError extends Error {}

/**
 * Builds the config from a parsed config file, the environment and command-line flags
 * (`--port 8081` or `--port=8081`); later sources win. Unknown flags are errors.
 */
export function loadBrokerConfig(
  file: Record<string, unknown>,
  env: Record<string, string | undefined>,
  args: string[],
): BrokerConfig {
  const raw = new Map<string, unknown>();
  const flatten = (obj: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(obj)) {
      if (k === "store" && v && typeof v === "object") {
        flatten(v as Record<string, unknown>, "store.");
      } else raw.set(prefix + k, v);
    }
  };
  flatten(file, "");
  for (const setting of SETTINGS) {
    const v = env[setting.env];
    if (v !== undefined && v !== "") raw.set(setting.path, parse(setting, v));
  }
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag === "--config") {
      if (inline === undefined) i++;
      continue;
    }
    const setting = SETTINGS.find((x) => x.flag === flag);
    if (!setting) throw new ConfigError(`Unknown flag ${flag}; run with --help for the list`);
    const value = inline ?? args[++i];
    if (value === undefined) throw new ConfigError(`Flag ${flag} needs a value`);
    raw.set(setting.path, parse(setting, value));
  }
  const dataDir = String(raw.get("dataDir") ?? "./data");
  const config = defaultBrokerConfig(dataDir);
  for (const [path, value] of raw) {
    if (path === "dataDir") continue;
    const known = SETTINGS.some((x) => x.path === path) || path.startsWith("store.") ||
      path in config;
    if (!known) throw new ConfigError(`Unknown setting ${path}`);
    if (path.startsWith("store.")) {
      (config.store as unknown as Record<string, unknown>)[path.slice(6)] = value;
    } else (config as unknown as Record<string, unknown>)[path] = value;
  }
  if (!config.kvPath) config.kvPath = `${dataDir}/kv.sqlite`;
  if (!config.advertisedAddress) config.advertisedAddress = `${config.host}:${config.port}`;
  if (!config.haAdvertisedHost) config.haAdvertisedHost = config.haHost;
  validate(config);
  return config;
}

function parse(setting: Setting, value: string): unknown {
  switch (setting.kind) {
    case "int": {
      if (!/^-?\d+$/.test(value)) {
        throw new ConfigError(
          `${setting.env}/${setting.flag} must be an integer, got ${JSON.stringify(value)}`,
        );
      }
      return Number(value);
    }
    case "bool":
      if (!/^(true|false|1|0)$/.test(value)) {
        throw new ConfigError(`${setting.flag} must be true or false`);
      }
      return value === "true" || value === "1";
    case "list":
      return value.split(",").map((x) => x.trim()).filter((x) => x !== "");
    case "json":
      try {
        return JSON.parse(value);
      } catch {
        throw new ConfigError(`${setting.env}/${setting.flag} must be JSON`);
      }
    default:
      return value;
  }
}

function validate(c: BrokerConfig) {
  if (c.timerRollWindowMs <= 0 || c.timerRollWindowMs >= c.store.fileReservedTime * 3_600_000) {
    throw new ConfigError(
      "timerRollWindowMs must be positive and below fileReservedTime, or a waiting timer's message could be deleted",
    );
  }
  const flush: FlushDiskType[] = ["SYNC_FLUSH", "ASYNC_FLUSH"];
  if (!flush.includes(c.store.flushDiskType)) {
    throw new ConfigError(`flushDiskType must be SYNC_FLUSH or ASYNC_FLUSH`);
  }
  if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535) {
    throw new ConfigError(`port must be 0-65535`);
  }
  if (c.pullWaitMsMax < 0 || c.pullWaitMsMax > 60_000) {
    throw new ConfigError(
      `pullWaitMsMax must be 0-60000 ms (Bun closes idle requests after 255 s at most)`,
    );
  }
  if (c.haMode !== "none" && c.haMode !== "cluster") {
    throw new ConfigError(`haMode must be none or cluster`);
  }
  if (c.replicationMode !== "ASYNC" && c.replicationMode !== "SYNC") {
    throw new ConfigError(`replicationMode must be ASYNC or SYNC`);
  }
  if (!Number.isInteger(c.inSyncReplicas) || c.inSyncReplicas < 1) {
    throw new ConfigError(`inSyncReplicas must be an integer >= 1 (the master counts as one)`);
  }
  if (c.haMode === "cluster" && !/^https?:\/\//.test(c.kvPath)) {
    throw new ConfigError(
      `haMode cluster needs kvPath to be a KV Connect URL shared by the group (a local KV file cannot be shared)`,
    );
  }
  if (!Array.isArray(c.apiKeys)) throw new ConfigError(`apiKeys must be a list`);
  if (
    !Array.isArray(c.webhookAllowHosts) ||
    c.webhookAllowHosts.some((h) => typeof h !== "string")
  ) {
    throw new ConfigError(`webhookAllowHosts must be a list of host names, IPs or CIDRs`);
  }
  for (const k of c.apiKeys) {
    if (typeof k?.key !== "string" || k.key.length < 16) {
      throw new ConfigError(`every API key needs a key of at least 16 characters`);
    }
  }
}

export function settingsHelp(): string {
  return SETTINGS.map((x) => `  ${x.flag.padEnd(30)} ${x.env.padEnd(26)} ${x.doc}`).join("\n");
}
