// How a functions process without a broker of its own (split mode, Deno Deploy) reaches one
// over HTTP or HTTPS: the SDK client, plus the operations views (cli/admin_http.ts, until the
// SDK carries them), the transaction calls (client/transactions.ts) and the QStash calls
// (/v1/qstash). Shared by the two entry files, which pick it like they pick the platform.
// Refusals come back as the broker's own BrokerError class: the resolver fails over to
// another broker itself (so no SDK retries), and the app renders that class.
import { BrokerError as SdkError, MqClient } from "../client/mod.ts";
import { TransactionClient, withTransactions } from "../client/transactions.ts";
import { AdminHttp } from "../cli/admin_http.ts";
import { remoteQstash } from "./qstash/remote.ts";
import { BrokerError, type ProblemJson } from "../runtime/protocol/errors.ts";
import type { BrokerResolver, QstashOf } from "../runtime/protocol/core_api.ts";
import type { KvPort } from "../runtime/platform/kv_port.ts";
import { KvClusterRouteSource } from "../runtime/cluster/kv_route_source.ts";
import { ClusterTopicAdmin } from "../runtime/cluster/topic_admin.ts";
import { ClusterQstash } from "../runtime/cluster/qstash_router.ts";
import { ClusterClient } from "../runtime/cluster/client.ts";
import { ClusterResolver } from "../runtime/cluster/cluster_resolver.ts";
import { clusterRouterSettingsFromEnv } from "../runtime/config/cluster_router_settings.ts";
import { BROKER_CA_FILE } from "../runtime/protocol/limits.ts";
import { ConfigError } from "../runtime/protocol/setting.ts";
import type { CronScheduleExport } from "../runtime/protocol/cluster_types.ts";
import { fromBase64, toBase64 } from "./base64.ts";

const asBrokerError = (e: { toProblem(): ProblemJson; status: number }) =>
  BrokerError.fromProblem(e.toProblem(), e.status);

/** The operations views (OpsApi) over the broker's own routes, on `client`. */
function withOps(client: MqClient, ops: AdminHttp) {
  const mapped = <T>(p: Promise<T>) =>
    p.catch((e) => {
      throw e instanceof SdkError ? asBrokerError(e) : e;
    });
  return Object.assign(client, {
    listGroups: () => mapped(ops.listGroups()),
    topicStats: (topic: string) => mapped(ops.topicStats(topic)),
    groupProgress: (group: string) => mapped(ops.groupProgress(group)),
    clusterView: () => mapped(ops.clusterView()),
    drainStatus: (topic: string, groups?: string[]) => mapped(ops.drainStatus(topic, groups)),
    // ScheduleMoveApi: the JSON form carries the message's body in base64.
    exportSchedule: async (id: string): Promise<CronScheduleExport> => {
      const s = await mapped(ops.exportSchedule(id));
      const { body, bodyEncoding, ...rest } = s.message;
      const bytes = bodyEncoding === "base64" ? fromBase64(body) : new TextEncoder().encode(body);
      return { ...s, message: { ...rest, body: bytes } };
    },
    importSchedule: (s: CronScheduleExport) =>
      mapped(ops.importSchedule({
        ...s,
        message: { ...s.message, body: toBase64(s.message.body), bodyEncoding: "base64" },
      })),
  });
}

export interface BrokerLinkOptions {
  /** The fetch every call goes through: the platform's fetchTrusting(ca) when
   * MQ_BROKER_CA_FILE is set; the global fetch by default. */
  fetch?: typeof fetch;
  /** brokerLinkBinaryBatches: batches go as binary frames (default JSON). */
  binaryBatches?: boolean;
}

/** `connect` for the route source and `qstash` for createApp,
 * presenting `token` (an admin key on the brokers). */
export function brokerLink(token: string | undefined, link: BrokerLinkOptions = {}) {
  const fetch = explainTls(link.fetch ?? ((input, init) => globalThis.fetch(input, init)));
  return remoteQstash((baseUrl) => {
    const options = { baseUrl, token, retries: 0, mapError: asBrokerError, fetch };
    const binaryBatches = link.binaryBatches ?? false;
    return withTransactions(
      withOps(new MqClient({ ...options, binaryBatches }), new AdminHttp(baseUrl, token, fetch)),
      new TransactionClient(options),
    );
  }, { token, fetch });
}

export interface ClusterRouterOptions {
  /** The coordination store the brokers register in (routes, topic records). */
  kv: KvPort;
  /** MQ_CLUSTER: only this cluster's groups. */
  cluster: string;
  /** brokerLink()'s: how a group's master is reached, and its QStash calls. */
  link: ReturnType<typeof brokerLink>;
  routeExpiryMs: number;
  routeCacheMs: number;
  nowMs: () => number;
  /** Where the router's settings come from (MQ_CLUSTER_*; unset: their defaults). */
  env: Record<string, string | undefined>;
  /** The route source's warnings (a group reporting more queues than a slot holds). */
  log?: (level: "warn", msg: string, fields?: Record<string, unknown>) => void;
}

/** The cluster router for the entry files (docs/cluster.md): the resolver (one
 * ClusterClient over the KV route source, routing each call to the group that owns its
 * queue), the QStash calls over every group (ClusterQstash: one set of signing keys, DLQ
 * merged, schedules found on their home group), and the route
 * cache's counters for /metrics. A one-group cluster answers as its one broker does.
 * Throws a ConfigError on a bad MQ_CLUSTER_* value. */
export function clusterRouter(o: ClusterRouterOptions): {
  resolver: BrokerResolver;
  qstash: QstashOf;
  cacheStats: () => { hits: number; misses: number };
  coalesceStats: () => { batches: number; messages: number };
  close: () => Promise<void>;
} {
  const settings = clusterRouterSettingsFromEnv(o.env);
  const source = new KvClusterRouteSource({
    kv: o.kv,
    cluster: o.cluster,
    connect: o.link.connect,
    routeExpiryMs: o.routeExpiryMs,
    routeCacheMs: o.routeCacheMs,
    topicsMax: settings.clusterRouteCacheTopicsMax,
    nowMs: o.nowMs,
    log: (level, msg, fields) => {
      if (level === "warn") o.log?.(level, msg, fields);
    },
  });
  const admin = new ClusterTopicAdmin(source);
  let client: ClusterClient | undefined;
  const resolver = new ClusterResolver(
    source,
    (s) => client = new ClusterClient(s, admin, { ...settings, nowMs: o.nowMs }),
  );
  const qstash = new ClusterQstash(source, o.link.qstash);
  return {
    resolver,
    qstash: () => qstash,
    cacheStats: () => source.cacheStats(),
    coalesceStats: () => client?.coalesceStats() ?? { batches: 0, messages: 0 },
    /** Stops the router's background polls (the transaction-check relay). */
    close: () => client?.close() ?? Promise.resolve(),
  };
}

/** The PEM text of MQ_BROKER_CA_FILE, or undefined when it is unset; a file that cannot be
 * read or holds no certificate is a ConfigError naming the setting. node:fs is loaded only
 * then: on Deno its Node layer costs a split-mode process ~15 ms of its cold start. */
export async function readBrokerCa(path: string): Promise<string | undefined> {
  if (path === "") return undefined;
  let pem: string;
  try {
    const { readFileSync } = await import("node:fs");
    pem = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      `${BROKER_CA_FILE.env}: cannot read ${path}: ${err}`,
      BROKER_CA_FILE.name,
    );
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new ConfigError(
      `${BROKER_CA_FILE.env}: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      BROKER_CA_FILE.name,
    );
  }
  return pem;
}

/** Names of the runtimes' certificate-verification failures (Deno: rustls's "invalid peer
 * certificate: UnknownIssuer"; Bun: BoringSSL's codes such as SELF_SIGNED_CERT_IN_CHAIN). */
const TLS_REFUSAL = /certificate|CERT_|UNABLE_TO_VERIFY|UnknownIssuer|SSL|TLS|handshake/i;

/** A fetch whose TLS refusals say what to do: trust the broker's CA, never skip the check. */
function explainTls(inner: typeof fetch): typeof fetch {
  return async (input, init) => {
    try {
      return await inner(input, init);
    } catch (err) {
      const text = describe(err);
      if (!TLS_REFUSAL.test(text)) throw err;
      throw new TypeError(
        `TLS to the broker failed (${text}): its certificate is not trusted here; set ${BROKER_CA_FILE.env} to the PEM bundle of the CA that issued it`,
        { cause: err },
      );
    }
  };
}

/** The error's message with its causes' (Deno nests the TLS reason in `cause`). */
function describe(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && depth < 4; depth++) {
    const { message, code, cause } = e as { message?: string; code?: string; cause?: unknown };
    parts.push([code, message ?? String(e)].filter(Boolean).join(" "));
    e = cause;
  }
  return parts.join(": ");
}
