// Settings of webhook push: the SSRF guard's exemptions, and the bounds on subscriptions,
// attempts in flight, read-ahead and the delivery log.
import { boolSetting, intSetting, listSetting } from "../protocol/setting.ts";

export const WEBHOOK_SETTINGS = [
  listSetting("webhookAllowHosts", "MQ_WEBHOOK_ALLOW_HOSTS", {
    default: [],
    defaultText: "none",
    allowedText: "a list of host names, IPs or CIDRs",
    doc:
      "Webhook hosts exempt from the SSRF address check (names, IPs, CIDRs; comma-separated in the environment); they may also use http and any port.",
  }),
  boolSetting("webhookAllowHttp", "MQ_WEBHOOK_ALLOW_HTTP", {
    default: false,
    doc: "Allow http: webhook URLs to any public host (https only otherwise).",
  }),
  intSetting("webhookSubscriptionsMax", "MQ_WEBHOOK_SUBSCRIPTIONS_MAX", {
    unit: "count",
    default: 1000,
    doc: "Webhook subscriptions at once.",
  }),
  intSetting("webhookTimeoutMsDefault", "MQ_WEBHOOK_TIMEOUT_MS", {
    unit: "ms",
    default: 15_000,
    min: 1,
    doc: "Per-attempt timeout of a subscription that names none.",
  }),
  intSetting("webhookTimeoutMsMax", "MQ_WEBHOOK_TIMEOUT_MS_MAX", {
    unit: "ms",
    default: 60_000,
    min: 1,
    doc: "Largest per-attempt timeout a subscription may name.",
  }),
  intSetting("webhookConcurrencyDefault", "MQ_WEBHOOK_CONCURRENCY", {
    unit: "count",
    default: 16,
    min: 1,
    doc: "Requests in flight per subscription that names no maxConcurrency.",
  }),
  intSetting("webhookConcurrencyMax", "MQ_WEBHOOK_CONCURRENCY_MAX", {
    unit: "count",
    default: 256,
    min: 1,
    doc: "Largest maxConcurrency a subscription may name.",
  }),
  intSetting("webhookReadAheadPerQueue", "MQ_WEBHOOK_READ_AHEAD", {
    unit: "count",
    default: 256,
    min: 1,
    doc: "Messages read ahead per queue of a subscription (bounds memory while one key is stuck).",
  }),
  intSetting("webhookRetryAfterMaxMs", "MQ_WEBHOOK_RETRY_AFTER_MAX_MS", {
    unit: "ms",
    default: 3_600_000,
    defaultText: "3600000 (1 h)",
    doc: "Longest Retry-After honoured; longer asks are cut to this.",
  }),
  intSetting("webhookLogEntriesMax", "MQ_WEBHOOK_LOG_ENTRIES", {
    unit: "count",
    default: 1000,
    min: 1,
    doc: "Delivery attempts kept per subscription for the delivery log (memory only).",
  }),
  intSetting("webhookLogQueryDefault", "MQ_WEBHOOK_LOG_QUERY_DEFAULT", {
    unit: "count",
    default: 100,
    min: 1,
    doc: "Delivery attempts a delivery-log query returns when it names no `limit`.",
  }),
  intSetting("webhookLogResponseBytes", "MQ_WEBHOOK_LOG_RESPONSE_BYTES", {
    unit: "bytes",
    default: 256,
    doc: "Response bytes kept per attempt in the delivery log.",
  }),
  intSetting("webhookShutdownGraceMs", "MQ_WEBHOOK_SHUTDOWN_GRACE_MS", {
    unit: "ms",
    default: 3000,
    doc: "Graceful shutdown waits this long for deliveries in flight, then aborts them.",
  }),
] as const;
