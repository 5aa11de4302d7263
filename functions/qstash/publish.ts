// Publish, enqueue and batch: one QStash message becomes one produce to the topic of its
// destination (the shared URL topic, a queue's, or a URL group's) with its settings as
// qstash.* properties; delay and Not-Before are our timers, dedup is our idempotency.
import { createHash } from "node:crypto";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { QSTASH_PROPERTY, QSTASH_PUBLISH_TOPIC } from "../../runtime/protocol/qstash.ts";
import type { ProduceMessage } from "../../runtime/protocol/types.ts";
import type { QstashOptions } from "./headers.ts";
import {
  flowLimits,
  flowTopic,
  groupTopic,
  type Plumbing,
  type QstashDeps,
  queueTopic,
  type RouteContext,
} from "./plumbing.ts";

export interface PublishResult {
  messageId: string;
  url?: string;
  deduplicated?: boolean;
}

const isUrl = (d: string) => /^https?:\/\//i.test(d);

/** Publishes one message; a URL group answers one result per endpoint. */
export async function publishOne(
  c: RouteContext,
  deps: QstashDeps,
  plumbing: Plumbing,
  destination: string,
  o: QstashOptions,
  body: Uint8Array,
  queue?: string,
): Promise<PublishResult | PublishResult[]> {
  const authorize = (topic: string) => deps.allow(c, "publish", { topic });
  const { topic, message, endpoints } = await qstashMessage(
    deps,
    plumbing,
    destination,
    o,
    body,
    queue,
    authorize,
  );
  if (o.notBefore !== undefined) {
    if (o.notBefore > Date.now()) message.deliverAt = o.notBefore;
  } else if (o.delayMs) message.delayMs = o.delayMs;
  const dedup = o.deduplicationId ??
    (o.contentBasedDeduplication ? contentId(destination, body, o) : undefined);
  if (dedup !== undefined) {
    message.idempotencyKey = "qstash-" + createHash("sha256").update(dedup).digest("hex");
  }
  const r = await deps.api.call((b) => b.produce(topic, message));
  const extra = r.idempotentReplay ? { deduplicated: true } : {};
  if (endpoints) return endpoints.map((url) => ({ messageId: r.messageId, url, ...extra }));
  return { messageId: r.messageId, url: destination, ...extra };
}

/** Everything a publish could be refused for, checked before anything is stored or
 * created (a batch checks every entry first): size, names, destinations, callbacks,
 * header combinations, then `authorize(topic)`. Answers the topic and, for a URL group,
 * its endpoints. */
export async function checkPublish(
  deps: QstashDeps,
  plumbing: Plumbing,
  destination: string,
  o: QstashOptions,
  body: Uint8Array,
  queue: string | undefined,
  authorize: (topic: string) => void,
): Promise<{ topic: string; endpoints?: string[] }> {
  if (body.length > deps.limits.maxMessageSize) {
    throw new BrokerError(
      "PAYLOAD_TOO_LARGE",
      `Cannot accept a body of ${body.length} bytes: maxMessageSize is ${deps.limits.maxMessageSize}`,
    );
  }
  const settings = await plumbing.settings();
  for (const url of [o.callback, o.failureCallback]) {
    if (url !== undefined) await deps.qstash.checkDestination(url);
  }
  if (o.timeoutMs !== undefined && (o.timeoutMs < 1 || o.timeoutMs > settings.timeoutMsMax)) {
    throw new BrokerError(
      "INVALID_HEADER",
      `Upstash-Timeout: at most ${settings.timeoutMsMax} ms (webhookTimeoutMsMax)`,
    );
  }
  if (o.flowControl && (queue !== undefined || !isUrl(destination))) {
    throw new BrokerError(
      "INVALID_HEADER",
      "Upstash-Flow-Control-Key is supported on publishes to a URL, not with a queue or URL group",
    );
  }
  if (isUrl(destination)) {
    await deps.qstash.checkDestination(destination);
    const topic = o.flowControl
      ? flowTopic(o.flowControl.key)
      : queue === undefined
      ? QSTASH_PUBLISH_TOPIC
      : queueTopic(queue);
    if (o.flowControl) flowLimits(o.flowControl, settings);
    authorize(topic);
    return { topic };
  }
  if (queue !== undefined) {
    throw new BrokerError("INVALID_PARAMETER", "Enqueue needs a URL destination, not a URL group");
  }
  const topic = groupTopic(destination);
  authorize(topic);
  const endpoints = await plumbing.endpointUrls(destination);
  if (endpoints.length === 0) {
    throw new BrokerError("TOPIC_NOT_FOUND", `No URL group ${destination}`);
  }
  return { topic, endpoints };
}

/** The topic and message of a publish (checkPublish first); creates the topic and
 * subscription on first use. Delay and dedup are the caller's. */
export async function qstashMessage(
  deps: QstashDeps,
  plumbing: Plumbing,
  destination: string,
  o: QstashOptions,
  body: Uint8Array,
  queue: string | undefined,
  authorize: (topic: string) => void,
): Promise<{ topic: string; message: ProduceMessage; endpoints?: string[] }> {
  const { topic, endpoints } = await checkPublish(
    deps,
    plumbing,
    destination,
    o,
    body,
    queue,
    authorize,
  );
  const settings = await plumbing.settings();
  // Every subscription's retryMaxTimes is qstashRetriesDefault: a message carries its
  // own only when it differs (a message with no properties is the cheapest to store).
  const properties: Record<string, string> = {};
  if (o.retries !== undefined && o.retries !== settings.retriesDefault) {
    properties[QSTASH_PROPERTY.retries] = String(o.retries);
  }
  if (Object.keys(o.forward).length > 0) {
    properties[QSTASH_PROPERTY.headers] = JSON.stringify(o.forward);
  }
  if (o.callback) properties[QSTASH_PROPERTY.callback] = o.callback;
  if (o.failureCallback) properties[QSTASH_PROPERTY.failureCallback] = o.failureCallback;
  if (o.label) properties["qstash.label"] = o.label;
  if (o.timeoutMs !== undefined) properties[QSTASH_PROPERTY.timeout] = String(o.timeoutMs);
  if (o.method) properties[QSTASH_PROPERTY.method] = o.method;
  if (endpoints === undefined) {
    properties[QSTASH_PROPERTY.url] = destination;
    if (queue !== undefined) properties[QSTASH_PROPERTY.queueName] = queue;
    if (o.flowControl) await plumbing.flowTopic(o.flowControl);
    else await plumbing.urlTopic(queue);
  }
  if (o.callback || o.failureCallback) await plumbing.callbacks();
  const message: ProduceMessage = { body };
  for (const _ in properties) {
    message.properties = properties;
    break;
  }
  if (o.contentType) message.contentType = o.contentType;
  return { topic, message, endpoints };
}

function contentId(destination: string, body: Uint8Array, o: QstashOptions): string {
  const h = createHash("sha256").update(destination).update("\0").update(body).update("\0");
  h.update(JSON.stringify([o.contentType ?? "", o.forward]));
  return h.digest("hex");
}
