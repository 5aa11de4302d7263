// The limits the HTTP front end enforces, as rows of the settings table. The broker's
// table (runtime/config/) includes these same rows, so the embedded app, the functions as
// their own process (functions/main.ts) and Deno Deploy (functions/deploy.ts) read the
// same environment variables with the same defaults and checks.
import {
  boolSetting,
  choiceSetting,
  fromEnv,
  intSetting,
  listSetting,
  textSetting,
} from "./setting.ts";

const MIB = 1024 * 1024;

export const MAX_MESSAGE_SIZE = intSetting("store.maxMessageSize", "MQ_MAX_MESSAGE_SIZE", {
  unit: "bytes",
  default: 4 * MIB,
  defaultText: "4194304 (4 MiB)",
  min: 1,
  doc: "Largest message body.",
  rocketmq: "maxMessageSize",
});
export const BATCH_BODY_BYTES_MAX = intSetting("batchBodyBytesMax", "MQ_BATCH_BODY_BYTES_MAX", {
  unit: "bytes",
  default: 16 * MIB,
  defaultText: "16777216 (16 MiB)",
  min: 1,
  doc: "Largest batch produce request body.",
});
export const BATCH_ITEMS_MAX = intSetting("batchItemsMax", "MQ_BATCH_ITEMS_MAX", {
  unit: "count",
  default: 1000,
  min: 1,
  doc: "Messages per batch produce request.",
});
export const BODY_READ_TIMEOUT_MS = intSetting("bodyReadTimeoutMs", "MQ_BODY_READ_TIMEOUT_MS", {
  unit: "ms",
  default: 10_000,
  min: 1,
  doc: "A request body must arrive within this time (slow-body defence).",
});
export const PULL_WAIT_MS_MAX = intSetting("pullWaitMsMax", "MQ_PULL_WAIT_MS_MAX", {
  unit: "ms",
  default: 15_000,
  max: 60_000,
  why: "a held pull keeps a connection and a heldPullsMax slot; a client re-polls instead",
  doc: "Longest a long-polling pull is held.",
  rocketmq: "BROKER_SUSPEND_MAX_TIME_MILLIS",
});
export const PULL_MSG_NUMS_MAX = intSetting("pullMsgNumsMax", "MQ_PULL_MAX", {
  unit: "count",
  default: 1000,
  min: 1,
  doc: "Largest `max` (messages) one pull may ask for.",
});
export const IDEMPOTENCY_KEY_BYTES_MAX = intSetting(
  "idempotencyKeyBytesMax",
  "MQ_IDEMPOTENCY_KEY_BYTES_MAX",
  {
    unit: "bytes",
    default: 256,
    min: 64,
    doc:
      "Longest Idempotency-Key header; at least 64, so the keys the broker makes (cron ticks) fit.",
  },
);
export const USER_PROPERTIES_MAX = intSetting("userPropertiesMax", "MQ_USER_PROPERTIES_MAX", {
  unit: "count",
  default: 64,
  doc: "User properties per message (Mq-Prop-* headers or `properties`).",
});
export const ROUTE_EXPIRY_MS = intSetting("routeExpiryMs", "MQ_ROUTE_EXPIRY_MS", {
  unit: "ms",
  default: 120_000,
  min: 1,
  doc: "A broker whose route is unrenewed this long is dropped from the route table.",
  rocketmq: "BROKER_CHANNEL_EXPIRED_TIME",
});
/** Functions only (split mode and Deploy): the broker keeps no route cache. */
export const ROUTE_CACHE_MS = intSetting("routeCacheMs", "MQ_ROUTE_CACHE_MS", {
  unit: "ms",
  default: 5000,
  doc: "The functions re-read the route table from KV after this long (and on a failure).",
});

/** The broker's cluster (brokerClusterName); the functions route over its groups only. */
export const CLUSTER_NAME = textSetting("brokerClusterName", "MQ_CLUSTER", {
  default: "DefaultCluster",
  doc: "Cluster name.",
  rocketmq: "brokerClusterName",
});

/** Trust for brokers serving TLS with a private CA (docs/operations.md, TLS). */
export const BROKER_CA_FILE = textSetting("brokerCaFile", "MQ_BROKER_CA_FILE", {
  default: "",
  defaultText: "(the runtime's trusted roots)",
  doc:
    "PEM CA bundle trusted, besides the runtime's roots, for brokers' https:// URLs: by the functions' broker link, and by a slave fetching its master's metadata. Verification is never turned off.",
});

/** How the functions' broker link sends batches (runtime/protocol/batch_frame.ts). */
export const BROKER_LINK_BINARY_BATCHES = boolSetting(
  "brokerLinkBinaryBatches",
  "MQ_BROKER_LINK_BINARY_BATCHES",
  {
    default: true,
    doc:
      "The functions send batch produces (their coalesced single produces among them) to the brokers as binary batch frames (docs/cluster.md): no base64 or JSON on either side. Off: JSON with base64 bodies, which brokers older than the frame also read.",
  },
);

/** Most messages one find may ask for over any front end (RocketMQ's maxMsgsNumBatch is 64);
 * queryMessageNumsMax can lower it, not raise it. */
export const QUERY_MESSAGE_NUMS_CEILING = 64;

/** Message ids one dead-letter redrive names at most (the HTTP route and its SDK callers). */
export const REDRIVE_IDS_MAX = 1000;

// How long the HTTP server waits for a client and how many it keeps, enforced by the
// platform's connection guard (runtime/platform/conn_guard.ts) on Deno and Bun alike; a
// request in flight (a long poll) is never idle.
export const HTTP_HEADER_TIMEOUT_MS = intSetting(
  "httpHeaderTimeoutMs",
  "MQ_HTTP_HEADER_TIMEOUT_MS",
  {
    unit: "ms",
    default: 10_000,
    min: 1,
    doc:
      "A request's line and headers must arrive within this time from their first byte, or the connection is closed (slow-loris defence).",
  },
);
export const HTTP_IDLE_TIMEOUT_MS = intSetting("httpIdleTimeoutMs", "MQ_HTTP_IDLE_TIMEOUT_MS", {
  unit: "ms",
  default: 30_000,
  min: 1,
  doc:
    "A keep-alive connection with no request in flight and no bytes moving is closed after this time; a held long poll is in flight.",
  rocketmq: "serverChannelMaxIdleTimeSeconds",
});
export const HTTP_CONNECTIONS_MAX = intSetting("httpConnectionsMax", "MQ_HTTP_CONNECTIONS_MAX", {
  unit: "count",
  default: 4096,
  min: 1,
  why:
    "each connection holds three file descriptors: the client's and both ends of the loopback hop to the server",
  doc: "Open HTTP connections; one more is closed as soon as it is accepted.",
});

export const HTTP_CONNECTION_GUARD = choiceSetting(
  "httpConnectionGuard",
  "MQ_HTTP_CONNECTION_GUARD",
  ["auto", "on", "off"],
  {
    default: "auto",
    doc:
      "Enforce httpHeaderTimeoutMs, httpIdleTimeoutMs and httpConnectionsMax through a TCP front before the runtime's server, which costs single produces a large share of their rate (bench/README.md). auto: on unless the server listens on loopback only (the default 127.0.0.1: nothing untrusted can connect); off only behind a proxy that enforces such limits.",
  },
);

/** The rows behind the platform's ConnectionLimits. */
export const HTTP_CONNECTION_SETTINGS = {
  guard: HTTP_CONNECTION_GUARD,
  headerTimeoutMs: HTTP_HEADER_TIMEOUT_MS,
  idleTimeoutMs: HTTP_IDLE_TIMEOUT_MS,
  connectionsMax: HTTP_CONNECTIONS_MAX,
} as const;

export interface HttpConnectionLimits {
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  connectionsMax: number;
}

/** Whether `hostname` accepts connections from this machine only. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "::1" || hostname === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The connection limits for a server listening on `hostname`; undefined: none (no guard). */
export function httpConnectionLimits(config: {
  httpConnectionGuard: "auto" | "on" | "off";
  httpHeaderTimeoutMs: number;
  httpIdleTimeoutMs: number;
  httpConnectionsMax: number;
}, hostname: string): HttpConnectionLimits | undefined {
  const guard = config.httpConnectionGuard;
  if (guard === "off" || (guard === "auto" && isLoopbackHost(hostname))) return undefined;
  return {
    headerTimeoutMs: config.httpHeaderTimeoutMs,
    idleTimeoutMs: config.httpIdleTimeoutMs,
    connectionsMax: config.httpConnectionsMax,
  };
}

export interface FunctionsLimits {
  /** Largest message body (the broker's maxMessageSize), bytes. */
  maxMessageSize: number;
  batchBodyBytesMax: number;
  batchItemsMax: number;
  bodyReadTimeoutMs: number;
  pullWaitMsMax: number;
  pullMsgNumsMax: number;
  idempotencyKeyBytesMax: number;
  userPropertiesMax: number;
}

/** The rows behind each FunctionsLimits field. */
export const LIMIT_SETTINGS = {
  maxMessageSize: MAX_MESSAGE_SIZE,
  batchBodyBytesMax: BATCH_BODY_BYTES_MAX,
  batchItemsMax: BATCH_ITEMS_MAX,
  bodyReadTimeoutMs: BODY_READ_TIMEOUT_MS,
  pullWaitMsMax: PULL_WAIT_MS_MAX,
  pullMsgNumsMax: PULL_MSG_NUMS_MAX,
  idempotencyKeyBytesMax: IDEMPOTENCY_KEY_BYTES_MAX,
  userPropertiesMax: USER_PROPERTIES_MAX,
} as const;

/** The settings the functions read when they run as their own process or on Deploy. */
/** Broker and functions alike: the HTTP server's own body limit, far above the API's. */
export const REQUEST_BODY_BYTES_BACKSTOP = intSetting(
  "requestBodyBytesBackstop",
  "MQ_REQUEST_BODY_BYTES_BACKSTOP",
  {
    unit: "bytes",
    default: 1024 * 1024 * 1024,
    defaultText: "1073741824 (1 GiB)",
    min: 1,
    doc:
      "The HTTP server's own body limit, a backstop only: the API's limits (batchBodyBytesMax, maxMessageSize) refuse first, with typed errors.",
  },
);

/** Browser pages that may call the API (CORS); functions/app.ts answers their preflights. */
export const CORS_ORIGINS = listSetting("corsOrigins", "MQ_CORS_ORIGINS", {
  default: [],
  defaultText: "none",
  allowedText: "origins scheme://host[:port], comma-separated; or *",
  item: (x) => x === "*" || /^https?:\/\/[^/\s?#,]+$/.test(x),
  doc:
    "Origins whose pages may call the HTTP API from a browser (CORS); preflights are answered, credentials are never allowed, so * means any page, with an API key it must hold itself.",
});

export const FUNCTIONS_SETTINGS = [
  ...Object.values(LIMIT_SETTINGS),
  ...Object.values(HTTP_CONNECTION_SETTINGS),
  ROUTE_EXPIRY_MS,
  ROUTE_CACHE_MS,
  CLUSTER_NAME,
  REQUEST_BODY_BYTES_BACKSTOP,
  CORS_ORIGINS,
  BROKER_CA_FILE,
  BROKER_LINK_BINARY_BATCHES,
];

/** The part of a broker's config (BrokerConfig) the limits come from. */
export type LimitsSource = Omit<FunctionsLimits, "maxMessageSize"> & {
  store: { maxMessageSize: number };
};

/** The limits of a broker's own settings (the embedded app enforces what the broker does). */
export function functionsLimits(config: LimitsSource): FunctionsLimits {
  return {
    maxMessageSize: config.store.maxMessageSize,
    batchBodyBytesMax: config.batchBodyBytesMax,
    batchItemsMax: config.batchItemsMax,
    bodyReadTimeoutMs: config.bodyReadTimeoutMs,
    pullWaitMsMax: config.pullWaitMsMax,
    pullMsgNumsMax: config.pullMsgNumsMax,
    idempotencyKeyBytesMax: config.idempotencyKeyBytesMax,
    userPropertiesMax: config.userPropertiesMax,
  };
}

/** Where split-mode functions listen unless HOST says otherwise. */
export const FUNCTIONS_HOST_DEFAULT = "127.0.0.1";

export interface FunctionsSettings {
  limits: FunctionsLimits;
  /** Undefined when the guard is off (httpConnectionGuard, and for auto the HOST). */
  connections: HttpConnectionLimits | undefined;
  routeExpiryMs: number;
  routeCacheMs: number;
  /** The cluster whose broker groups the functions route over (MQ_CLUSTER). */
  cluster: string;
  requestBodyBytesBackstop: number;
  corsOrigins: string[];
  /** A PEM file path, or "" for the runtime's trusted roots only. */
  brokerCaFile: string;
  brokerLinkBinaryBatches: boolean;
}

/** The functions' settings from the environment (unset: the broker's defaults); throws
 * ConfigError on a bad value. */
export function functionsSettingsFromEnv(
  env: Record<string, string | undefined>,
): FunctionsSettings {
  const s = LIMIT_SETTINGS;
  return {
    limits: {
      maxMessageSize: fromEnv(s.maxMessageSize, env),
      batchBodyBytesMax: fromEnv(s.batchBodyBytesMax, env),
      batchItemsMax: fromEnv(s.batchItemsMax, env),
      bodyReadTimeoutMs: fromEnv(s.bodyReadTimeoutMs, env),
      pullWaitMsMax: fromEnv(s.pullWaitMsMax, env),
      pullMsgNumsMax: fromEnv(s.pullMsgNumsMax, env),
      idempotencyKeyBytesMax: fromEnv(s.idempotencyKeyBytesMax, env),
      userPropertiesMax: fromEnv(s.userPropertiesMax, env),
    },
    connections: httpConnectionLimits({
      httpConnectionGuard: fromEnv(HTTP_CONNECTION_GUARD, env),
      httpHeaderTimeoutMs: fromEnv(HTTP_HEADER_TIMEOUT_MS, env),
      httpIdleTimeoutMs: fromEnv(HTTP_IDLE_TIMEOUT_MS, env),
      httpConnectionsMax: fromEnv(HTTP_CONNECTIONS_MAX, env),
    }, env.HOST || FUNCTIONS_HOST_DEFAULT),
    routeExpiryMs: fromEnv(ROUTE_EXPIRY_MS, env),
    routeCacheMs: fromEnv(ROUTE_CACHE_MS, env),
    cluster: fromEnv(CLUSTER_NAME, env),
    requestBodyBytesBackstop: fromEnv(REQUEST_BODY_BYTES_BACKSTOP, env),
    corsOrigins: fromEnv(CORS_ORIGINS, env),
    brokerCaFile: fromEnv(BROKER_CA_FILE, env),
    brokerLinkBinaryBatches: fromEnv(BROKER_LINK_BINARY_BATCHES, env),
  };
}
