// Settings of the broker process: where it listens, who it is, its data, KV and API keys,
// and the limits of the HTTP API (rows shared with the functions, runtime/protocol/limits.ts).
import type { ApiKeyConfig } from "../protocol/types.ts";
import {
  boolSetting,
  choiceSetting,
  ConfigError,
  intSetting,
  jsonSetting,
  textSetting,
} from "../protocol/setting.ts";
import {
  BATCH_BODY_BYTES_MAX,
  BATCH_ITEMS_MAX,
  BODY_READ_TIMEOUT_MS,
  BROKER_CA_FILE,
  CLUSTER_NAME,
  CORS_ORIGINS,
  HTTP_CONNECTION_GUARD,
  HTTP_CONNECTIONS_MAX,
  HTTP_HEADER_TIMEOUT_MS,
  HTTP_IDLE_TIMEOUT_MS,
  IDEMPOTENCY_KEY_BYTES_MAX,
  REQUEST_BODY_BYTES_BACKSTOP,
  ROUTE_EXPIRY_MS,
  USER_PROPERTIES_MAX,
} from "../protocol/limits.ts";

/** Shortest API key accepted: a guessable key is no key. */
export const API_KEY_CHARS_MIN = 16;

function validApiKeys(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const k of value) {
    if (typeof k?.key !== "string" || k.key.length < API_KEY_CHARS_MIN) {
      throw new ConfigError(
        `every API key needs a key of at least ${API_KEY_CHARS_MIN} characters`,
        "apiKeys",
      );
    }
  }
  return true;
}

export const SERVER_SETTINGS = [
  intSetting("port", "PORT", {
    default: 8080,
    max: 65535,
    doc: "HTTP port (0 picks a free port).",
  }),
  textSetting("host", "HOST", { default: "127.0.0.1", doc: "HTTP listen address." }),
  textSetting("advertisedAddress", "MQ_ADVERTISED_ADDRESS", {
    default: "",
    defaultText: "host:port",
    doc: "host:port other processes use to reach this broker (the route table).",
  }),
  textSetting("httpTlsCertFile", "MQ_HTTP_TLS_CERT_FILE", {
    default: "",
    defaultText: "(plain HTTP)",
    doc:
      "PEM certificate chain: with httpTlsKeyFile, the HTTP API serves HTTPS only and the broker registers an https:// URL in the route table (docs/operations.md, TLS).",
  }),
  textSetting("httpTlsKeyFile", "MQ_HTTP_TLS_KEY_FILE", {
    default: "",
    doc: "PEM private key of httpTlsCertFile.",
  }),
  BROKER_CA_FILE,
  textSetting("dataDir", "DATA_DIR", {
    default: "./data",
    doc: "Data folder (CommitLog, queues, index, metadata, KV).",
  }),
  textSetting("brokerName", "MQ_BROKER_NAME", {
    default: "broker-a",
    doc: "Broker group name.",
    rocketmq: "brokerName",
  }),
  CLUSTER_NAME,
  textSetting("kvPath", "MQ_KV", {
    default: "",
    defaultText: "<dataDir>/kv.sqlite",
    doc:
      "Coordination store: a local Deno KV file path (one process; a lone broker leaves it unopened, as no other process reads a route there), a KV Connect URL (Deno Deploy KV, denokv), or etcd v3 as etcd://host:port[,host:port][?callTimeoutMs=N] (several processes; each etcd call times out after callTimeoutMs, default 5000).",
  }),
  textSetting("kvAccessToken", "DENO_KV_ACCESS_TOKEN", {
    default: "",
    doc: "Access token for a KV Connect URL.",
  }),
  jsonSetting<"apiKeys", ApiKeyConfig[]>("apiKeys", "MQ_API_KEYS", {
    default: [],
    defaultText: "[] (open: logs a warning)",
    allowedText: "a JSON list of {key,name,publish[],subscribe[],admin}",
    valid: validApiKeys,
    doc: "API keys and their rights; none leaves the API open.",
  }),
  choiceSetting("logLevel", "MQ_LOG_LEVEL", ["debug", "info", "warn", "error"], {
    default: "info",
    doc: "Least severe log line written (JSON lines on stderr).",
  }),
  intSetting("shutdownGraceMs", "MQ_SHUTDOWN_GRACE_MS", {
    unit: "ms",
    default: 10_000,
    min: 1,
    doc: "Graceful shutdown gives held requests and flushes this long, then exits.",
  }),
  intSetting("kvCloseWaitMs", "MQ_KV_CLOSE_WAIT_MS", {
    unit: "ms",
    default: 2000,
    min: 1,
    doc:
      "At shutdown a replica waits this long for its KV writes, then exits anyway (a KV client retries for as long as the KV is down).",
  }),
  intSetting("idleGcMs", "MQ_IDLE_GC_MS", {
    unit: "ms",
    default: 500,
    max: 3_600_000,
    doc:
      "After work (start-up counts), once the process has used under idleGcCpuPercent of a core for this long, it runs one memory-reducing full garbage collection (~25 ms) that gives the young generation and freed pages back: ~4 MiB of idle RSS on Deno (needs --expose-gc, which deno task start passes; without it, and on Bun, whose collector gives memory back on its own, nothing runs). The process checks once a window, so a window under ~100 ms wakes it often for nothing. 0: never.",
  }),
  intSetting("idleGcIntervalMs", "MQ_IDLE_GC_INTERVAL_MS", {
    unit: "ms",
    default: 60_000,
    max: 86_400_000,
    doc: "At most one idle collection (idleGcMs) this often.",
  }),
  intSetting("idleGcCpuPercent", "MQ_IDLE_GC_CPU_PERCENT", {
    unit: "percent",
    default: 2,
    min: 1,
    max: 100,
    doc: "A window of idleGcMs counts as idle while the process uses under this share of one core.",
  }),
  HTTP_CONNECTION_GUARD,
  HTTP_HEADER_TIMEOUT_MS,
  HTTP_IDLE_TIMEOUT_MS,
  HTTP_CONNECTIONS_MAX,
  REQUEST_BODY_BYTES_BACKSTOP,
  CORS_ORIGINS,
  intSetting("routeHeartbeatMs", "MQ_ROUTE_HEARTBEAT_MS", {
    unit: "ms",
    default: 30_000,
    min: 1,
    doc: "The broker registers its route in KV this often.",
    rocketmq: "registerNameServerPeriod",
  }),
  ROUTE_EXPIRY_MS,
  boolSetting("autoCreateTopicEnable", "MQ_AUTO_CREATE_TOPIC", {
    default: true,
    doc: "Create a topic on its first produce.",
    rocketmq: "autoCreateTopicEnable",
  }),
  intSetting("defaultTopicQueueNums", "MQ_DEFAULT_TOPIC_QUEUES", {
    unit: "count",
    default: 8,
    min: 1,
    doc: "Queues of an auto-created topic.",
    rocketmq: "defaultTopicQueueNums",
  }),
  intSetting("topicQueueNumsMax", "MQ_TOPIC_QUEUES_MAX", {
    unit: "count",
    default: 1024,
    min: 1,
    doc: "Largest queue count of a topic.",
  }),
  intSetting("topicsMax", "MQ_TOPICS_MAX", {
    unit: "count",
    default: 4096,
    min: 1,
    doc: "Most topics a broker holds, created or auto-created; one more is refused with " +
      "409 too-many-topics. Counts client topics only: %RETRY%, %DLQ% and the broker's " +
      "own topics are bounded by groupsMax and never refused.",
  }),
  intSetting("groupsMax", "MQ_GROUPS_MAX", {
    unit: "count",
    default: 4096,
    min: 1,
    doc: "Most consumer groups a broker holds; one more is refused with 409 too-many-groups.",
  }),
  BATCH_BODY_BYTES_MAX,
  BATCH_ITEMS_MAX,
  BODY_READ_TIMEOUT_MS,
  IDEMPOTENCY_KEY_BYTES_MAX,
  USER_PROPERTIES_MAX,
] as const;
