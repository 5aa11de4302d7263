// Settings of webhook delivery's moving parts: how the delivery service reads ahead from
// the store, and the bounds of the HTTP client and DNS cache that carry each attempt. The
// defaults are the ones those modules declare for use on their own (tests, benches).
import { intSetting } from "../protocol/setting.ts";
import {
  WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT,
  WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
  WEBHOOK_IDLE_CONNECTION_MS_DEFAULT,
  WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT,
  WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT,
  WEBHOOK_TARGETS_CACHED_MAX_DEFAULT,
} from "../webhook/http_delivery.ts";
import { DNS_CACHE_ENTRIES_MAX_DEFAULT, DNS_CACHE_MS_DEFAULT } from "../webhook/ssrf.ts";

export const EGRESS_SETTINGS = [
  intSetting("webhookReadBatchNums", "MQ_WEBHOOK_READ_BATCH", {
    unit: "count",
    default: 32,
    min: 1,
    doc: "Messages read per refill of one queue's read-ahead window.",
  }),
  intSetting("webhookReadBytesMax", "MQ_WEBHOOK_READ_BYTES_MAX", {
    unit: "bytes",
    default: 8 * 1024 * 1024,
    defaultText: "8388608 (8 MiB)",
    min: 1,
    doc: "Bytes read per refill (the first message is always read).",
  }),
  intSetting("webhookRefillsPerPump", "MQ_WEBHOOK_REFILLS_PER_PUMP", {
    unit: "count",
    default: 4,
    min: 1,
    doc: "Refills of one queue per pump, so one busy queue cannot hold the event loop.",
  }),
  intSetting("webhookStoreRetryMs", "MQ_WEBHOOK_STORE_RETRY_MS", {
    unit: "ms",
    default: 1000,
    min: 1,
    doc: "A retry copy that could not be stored is tried again after this long.",
  }),
  intSetting("webhookConnectTimeoutMs", "MQ_WEBHOOK_CONNECT_TIMEOUT_MS", {
    unit: "ms",
    default: WEBHOOK_CONNECT_TIMEOUT_MS_DEFAULT,
    min: 1,
    doc: "Connecting to an endpoint (TCP, and the TLS handshake for https) may take this long.",
  }),
  intSetting("webhookResponseBytesMax", "MQ_WEBHOOK_RESPONSE_BYTES_MAX", {
    unit: "bytes",
    default: WEBHOOK_RESPONSE_BYTES_MAX_DEFAULT,
    min: 1,
    doc: "Response bytes read at most; past this the connection is dropped, not drained.",
  }),
  intSetting("webhookResponseHeaderBytesMax", "MQ_WEBHOOK_RESPONSE_HEADER_BYTES_MAX", {
    unit: "bytes",
    default: WEBHOOK_RESPONSE_HEADER_BYTES_MAX_DEFAULT,
    min: 1,
    doc: "Largest response head accepted (Node's default maxHeaderSize).",
  }),
  intSetting("webhookConnectionsPerAddressMax", "MQ_WEBHOOK_CONNECTIONS_PER_ADDRESS", {
    unit: "count",
    default: WEBHOOK_CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
    min: 1,
    doc: "Open connections to one address:port; more requests wait for one.",
  }),
  intSetting("webhookIdleConnectionMs", "MQ_WEBHOOK_IDLE_CONNECTION_MS", {
    unit: "ms",
    default: WEBHOOK_IDLE_CONNECTION_MS_DEFAULT,
    min: 1,
    doc:
      "An idle pooled connection is closed after this long: below the 5 s keep-alive of Node's server, so we seldom write into a closing connection.",
  }),
  intSetting("webhookTargetsCachedMax", "MQ_WEBHOOK_TARGETS_CACHED", {
    unit: "count",
    default: WEBHOOK_TARGETS_CACHED_MAX_DEFAULT,
    min: 1,
    doc: "Checked URLs and connection pools kept; the oldest go first past this.",
  }),
  intSetting("webhookDnsCacheMs", "MQ_WEBHOOK_DNS_CACHE_MS", {
    unit: "ms",
    default: DNS_CACHE_MS_DEFAULT,
    doc: "DNS answers are reused this long (and vetted again on every use).",
  }),
  intSetting("webhookDnsCacheEntriesMax", "MQ_WEBHOOK_DNS_CACHE_ENTRIES", {
    unit: "count",
    default: DNS_CACHE_ENTRIES_MAX_DEFAULT,
    min: 1,
    doc: "Host names the DNS cache remembers; the oldest go first past this.",
  }),
] as const;
