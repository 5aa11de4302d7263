// Webhook subscriptions: checking an API input into a stored subscription, and keeping
// subscriptions in the metadata database (one row each; the settings as JSON).
import type { MetadataDb } from "../../storage/metadata/schema.ts";
import { WebhookSubscriptionRepo } from "../../storage/metadata/webhook_subscription_repo.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { SubscriptionInput, SubscriptionStatus } from "../protocol/types.ts";
import type { StoredSubscription } from "./delivery_service.ts";
import { generateSecret, secretKey, SECRETS_MAX } from "./signing.ts";

export interface SubscriptionLimits {
  webhookTimeoutMsDefault: number;
  webhookTimeoutMsMax: number;
  webhookConcurrencyDefault: number;
  webhookConcurrencyMax: number;
}

/** Extra headers per subscription, and their sizes. */
export const EXTRA_HEADERS_MAX = 32;
const HEADER_VALUE_BYTES_MAX = 1024;
/** Starts per second a subscription may ask for. */
export const RATE_PER_SEC_MAX = 100_000;
/** Headers the broker sets itself (or the HTTP layer owns). */
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "expect",
  "te",
  "trailer",
  "proxy-authorization",
  "user-agent",
]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const bad = (detail: string) => new BrokerError("INVALID_PARAMETER", detail);

/**
 * The subscription to store for a PUT: the input with defaults applied (PUT semantics:
 * a setting left out takes its default), except secrets, which are kept from the previous
 * version when left out, or generated for a new subscription.
 */
export function normalizeSubscription(
  group: string,
  input: SubscriptionInput,
  previous: StoredSubscription | undefined,
  limits: SubscriptionLimits,
  checkUrl: (url: string) => void,
  nowMs: number,
): StoredSubscription {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw bad("A subscription must be a JSON object");
  }
  const known = new Set([
    "topic",
    "tags",
    "url",
    "secrets",
    "headers",
    "timeoutMs",
    "maxConcurrency",
    "ratePerSec",
    "ordered",
    "retryMaxTimes",
    "retryBackoffMs",
    "startFrom",
    "failureCallbackUrl",
    "dialect",
  ]);
  for (const k of Object.keys(input)) {
    if (!known.has(k)) throw bad(`Unknown subscription field ${JSON.stringify(k)}`);
  }
  if (typeof input.topic !== "string") throw bad("A subscription needs a topic");
  if (typeof input.url !== "string") throw bad("A subscription needs a url");
  const dialect = input.dialect ?? "standard";
  if (dialect !== "standard" && dialect !== "qstash") {
    throw bad(`dialect must be "standard" or "qstash"`);
  }
  // A QStash subscription may leave the URL to each message (checked when published).
  if (!(dialect === "qstash" && input.url === "")) checkUrl(input.url);
  const tags = input.tags ?? "*";
  if (typeof tags !== "string" || tags.length > 1024) throw bad("tags must be a tag expression");
  let secrets: string[];
  if (input.secrets === undefined) secrets = previous?.secrets ?? [generateSecret()];
  else {
    if (!Array.isArray(input.secrets) || input.secrets.length < 1) {
      throw bad("secrets must be a list of one or more whsec_ secrets");
    }
    if (input.secrets.length > SECRETS_MAX) {
      throw bad(`At most ${SECRETS_MAX} signing secrets at once`);
    }
    for (const s of input.secrets) secretKey(s);
    secrets = [...input.secrets];
  }
  const headers = checkHeaders(input.headers ?? {});
  const timeoutMs = int(
    input.timeoutMs,
    limits.webhookTimeoutMsDefault,
    1,
    limits.webhookTimeoutMsMax,
    "timeoutMs",
  );
  const maxConcurrency = int(
    input.maxConcurrency,
    limits.webhookConcurrencyDefault,
    1,
    limits.webhookConcurrencyMax,
    "maxConcurrency",
  );
  const ratePerSec = int(input.ratePerSec, 0, 0, RATE_PER_SEC_MAX, "ratePerSec");
  if (input.ordered !== undefined && typeof input.ordered !== "boolean") {
    throw bad("ordered must be true or false");
  }
  const failureCallbackUrl = input.failureCallbackUrl ?? null;
  if (failureCallbackUrl !== null) {
    if (typeof failureCallbackUrl !== "string") throw bad("failureCallbackUrl must be a URL");
    checkUrl(failureCallbackUrl);
  }
  const start = input.startFrom;
  if (
    start !== undefined && start !== "latest" && start !== "earliest" &&
    !(Number.isSafeInteger(start) && (start as number) >= 0)
  ) {
    throw bad(`startFrom must be "latest", "earliest" or a timestamp in ms`);
  }
  return {
    group,
    topic: input.topic,
    tags,
    url: input.url,
    secrets,
    headers,
    timeoutMs,
    maxConcurrency,
    ratePerSec,
    ordered: input.ordered ?? false,
    failureCallbackUrl,
    ...(dialect === "qstash" ? { dialect } : {}),
    status: previous?.status ?? "active",
    statusReason: previous?.statusReason ?? null,
    createdAt: previous?.createdAt ?? nowMs,
    updatedAt: nowMs,
  };
}

function int(v: unknown, dflt: number, min: number, max: number, name: string): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) {
    throw bad(`${name} must be an integer from ${min} to ${max}`);
  }
  return v as number;
}

function checkHeaders(headers: unknown): Record<string, string> {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    throw bad("headers must be an object of name: value");
  }
  const entries = Object.entries(headers);
  if (entries.length > EXTRA_HEADERS_MAX) throw bad(`At most ${EXTRA_HEADERS_MAX} extra headers`);
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name)) throw bad(`Header name ${JSON.stringify(name)} is not a token`);
    if (
      RESERVED_HEADERS.has(lower) || lower.startsWith("webhook-") || lower.startsWith("mq-")
    ) {
      throw bad(`Header ${name} is set by the broker and cannot be overridden`);
    }
    if (
      typeof value !== "string" || value.length > HEADER_VALUE_BYTES_MAX ||
      /[\r\n\0]/.test(value)
    ) {
      throw bad(
        `Header ${name} needs a value of at most ${HEADER_VALUE_BYTES_MAX} bytes without line breaks`,
      );
    }
    out[lower] = value;
  }
  return out;
}

/** Subscriptions in the metadata database (storage/metadata/webhook_subscription_repo.ts). */
export class SubscriptionRepo {
  readonly #table: WebhookSubscriptionRepo;

  constructor(db: MetadataDb) {
    this.#table = new WebhookSubscriptionRepo(db);
  }

  async load(): Promise<StoredSubscription[]> {
    const records = await this.#table.all();
    return records.map((r) => ({
      ...r.config as Omit<StoredSubscription, keyof typeof r>,
      group: r.group,
      topic: r.topic,
      status: r.status,
      statusReason: r.statusReason,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    }));
  }

  save(sub: StoredSubscription): Promise<void> {
    const { group, topic, status, statusReason, createdAt, updatedAt, ...config } = sub;
    return this.#table.upsert({
      group,
      topic,
      config,
      status,
      statusReason,
      createdAt,
      updatedAt,
    });
  }

  saveStatus(
    group: string,
    status: SubscriptionStatus,
    reason: string | null,
    nowMs: number,
  ): Promise<void> {
    return this.#table.setStatus(group, status, reason, nowMs);
  }

  delete(group: string): Promise<void> {
    return this.#table.delete(group);
  }
}
