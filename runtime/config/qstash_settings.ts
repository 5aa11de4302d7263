// Settings of the QStash-compatible API (/v2, docs/qstash.md): its signing keys, and the
// retries and backoff a message gets when its publisher names none.
import { intSetting, listSetting, textSetting } from "../protocol/setting.ts";

export const QSTASH_SETTINGS = [
  textSetting("qstashCurrentSigningKey", "MQ_QSTASH_CURRENT_SIGNING_KEY", {
    default: "",
    defaultText: "generated once, kept in the data folder",
    doc:
      "The key QStash deliveries are signed with (`sig_…`); set it with the next key to keep an app's existing QSTASH_*_SIGNING_KEY. Used when the data folder holds no keys yet.",
  }),
  textSetting("qstashNextSigningKey", "MQ_QSTASH_NEXT_SIGNING_KEY", {
    default: "",
    defaultText: "generated once, kept in the data folder",
    doc: "The next QStash signing key (becomes current on rotate).",
  }),
  intSetting("qstashRetriesDefault", "MQ_QSTASH_RETRIES_DEFAULT", {
    unit: "count",
    default: 3,
    doc: "Retries of a QStash message that sends no Upstash-Retries (QStash's default).",
  }),
  intSetting("qstashRetriesMax", "MQ_QSTASH_RETRIES_MAX", {
    unit: "count",
    default: 20,
    doc: "Largest Upstash-Retries accepted.",
  }),
  listSetting("qstashRetryBackoffMs", "MQ_QSTASH_RETRY_BACKOFF_MS", {
    default: ["12000", "148000", "1808000", "22026000", "86400000"],
    defaultText: "12000,148000,1808000,22026000,86400000 (QStash's e^(2.5 n) s, at most 1 day)",
    allowedText: "a list of delays in ms",
    doc:
      "Delay before QStash retry N+1 is entry N, the last repeating (comma-separated in the environment).",
  }),
  intSetting("qstashConcurrency", "MQ_QSTASH_CONCURRENCY", {
    unit: "count",
    default: 256,
    min: 1,
    doc:
      "Deliveries in flight for messages published to URLs, per URL-group endpoint and for callbacks (at most webhookConcurrencyMax).",
  }),
] as const;
