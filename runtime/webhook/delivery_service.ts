// Webhook push: each subscription is a consumer group whose consumer is an HTTP endpoint.
// The engine is RocketMQ's push consumer, run inside the broker:
//
// - Per queue of the topic (and the group's retry queue) a cursor reads ahead from the
//   group's committed offset, up to webhookReadAheadPerQueue messages, filtered by tag.
// - Deliveries start while the subscription has room (maxConcurrency, ratePerSec, no
//   Retry-After pause). Ordered subscriptions start at most one message per sharding key
//   (per queue for messages without one) and never one before an earlier unsettled message
//   of its key.
// - The committed offset of a queue is its oldest unsettled message, so a crash redelivers
//   from there: at-least-once, every retry with the same webhook-id (the message id).
// - 2xx settles. 410 disables the subscription (the message stays unsettled). 429/503 with
//   Retry-After pause the whole subscription until then and the message retries no sooner.
//   Anything else — other statuses, 3xx (never followed), timeouts, connection errors — is a
//   failed attempt: concurrent subscriptions put a copy into %RETRY%{group} through the
//   timer wheel at now + backoff (the group's list, or RocketMQ's ladder from level 3) with
//   reconsumeTimes + 1 and settle the original; ordered subscriptions wait the backoff and
//   retry in place. Past retryMaxTimes the message goes to %DLQ%{group} and the failure
//   callback, if any, is told.
// Its parts: delivery_runner.ts (one subscription's loop), delivery_cursor.ts (one queue's
// read-ahead), delivery_request.ts and retry_copy.ts (what goes out), delivery_types.ts.
import type { SubscriptionStats, SubscriptionView } from "../protocol/types.ts";
import { retryTopicOf } from "../pop/group_topics.ts";
import { DeliveryLog } from "./delivery_log.ts";
import { Runner } from "./delivery_runner.ts";
import type { StoredSubscription, WebhookDeps } from "./delivery_types.ts";
import { maskSecret, secretKey, signatureHeader } from "./signing.ts";

export type {
  RetryPolicy,
  StoredSubscription,
  WebhookDeps,
  WebhookRequest,
  WebhookResponse,
  WebhookSettings,
  WebhookTransport,
} from "./delivery_types.ts";
export { messageIdOf } from "./delivery_cursor.ts";

export class WebhookService {
  readonly log: DeliveryLog;
  inFlightTotal = 0;
  #subs = new Map<string, StoredSubscription>();
  #runners = new Map<string, Runner>();
  #byTopic = new Map<string, Set<string>>();
  #closed = false;

  constructor(private readonly deps: WebhookDeps) {
    this.log = new DeliveryLog(deps.settings.webhookLogEntriesMax);
  }

  get size(): number {
    return this.#subs.size;
  }

  /** Loads the stored subscriptions and starts the active ones. */
  start(subs: StoredSubscription[]): void {
    for (const sub of subs) this.#install(sub);
  }

  has(group: string): boolean {
    return this.#subs.has(group);
  }

  get(group: string): StoredSubscription | undefined {
    return this.#subs.get(group);
  }

  list(): StoredSubscription[] {
    return [...this.#subs.values()];
  }

  /** Replaces (or adds) a subscription; its runner restarts from the committed offsets. */
  async put(sub: StoredSubscription): Promise<void> {
    await this.#uninstall(sub.group);
    this.#install(sub);
  }

  async remove(group: string): Promise<void> {
    await this.#uninstall(group);
    this.log.forget(group);
  }

  /** Stops the runner, runs `between` (an offset reset), starts it again. */
  async restart(group: string, between: () => void): Promise<void> {
    const sub = this.#subs.get(group);
    if (!sub) return;
    await this.#uninstall(group);
    between();
    this.#install(sub);
  }

  arriving(topic: string, queueId: number): void {
    const groups = this.#byTopic.get(topic);
    if (!groups) return;
    for (const g of groups) this.#runners.get(g)?.arriving(topic, queueId);
  }

  /** A 410 Gone: stop delivering, remember why, tell the failure callback. */
  disable(group: string, reason: string): void {
    const sub = this.#subs.get(group);
    if (!sub || sub.status !== "active") return;
    const next = { ...sub, status: "disabled" as const, statusReason: reason };
    this.deps.log("warn", "webhook subscription disabled", { group, reason });
    this.put(next).then(() => this.deps.saveStatus(group, "disabled", reason)).catch((err) =>
      this.deps.log("error", "saving a disabled subscription failed", { group, err: String(err) })
    );
    this.notifyFailure(sub, {
      type: "subscription.disabled",
      group,
      reason,
      at: this.deps.nowMs(),
    });
  }

  /** Best effort, one attempt, signed like a delivery: the failure callback. */
  notifyFailure(sub: StoredSubscription, event: Record<string, unknown>): void {
    if (!sub.failureCallbackUrl || this.#closed) return;
    const body = new TextEncoder().encode(JSON.stringify(event));
    const id = `evt_${crypto.randomUUID().replaceAll("-", "")}`;
    const timestamp = Math.floor(this.deps.nowMs() / 1000);
    this.deps.transport({
      url: sub.failureCallbackUrl,
      headers: {
        "content-type": "application/json",
        "user-agent": "edgemq-webhook/1",
        "webhook-id": id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(sub.secrets.map(secretKey), id, timestamp, body),
      },
      body,
      timeoutMs: sub.timeoutMs,
      signal: AbortSignal.timeout(sub.timeoutMs),
    }).catch((err) =>
      this.deps.log("warn", "webhook failure callback failed", {
        group: sub.group,
        err: String(err),
      })
    );
  }

  view(sub: StoredSubscription, revealSecrets = false): SubscriptionView {
    const runner = this.#runners.get(sub.group);
    const policy = this.deps.retryPolicy(sub.group);
    const stats: SubscriptionStats = {
      ...(runner?.stats ?? { delivered: 0, failedAttempts: 0, retried: 0, deadLettered: 0 }),
      inFlight: runner?.inFlight ?? 0,
      lag: runner?.lag() ?? this.#lagStopped(sub),
    };
    return {
      group: sub.group,
      topic: sub.topic,
      tags: sub.tags,
      url: sub.url,
      secrets: revealSecrets ? [...sub.secrets] : sub.secrets.map(maskSecret),
      headers: { ...sub.headers },
      timeoutMs: sub.timeoutMs,
      maxConcurrency: sub.maxConcurrency,
      ratePerSec: sub.ratePerSec,
      ordered: sub.ordered,
      retryMaxTimes: policy.retryMaxTimes,
      retryBackoffMs: policy.backoffList ?? null,
      failureCallbackUrl: sub.failureCallbackUrl,
      ...(sub.dialect ? { dialect: sub.dialect } : {}),
      status: sub.status,
      statusReason: sub.statusReason,
      createdAt: sub.createdAt,
      updatedAt: sub.updatedAt,
      stats,
    };
  }

  #lagStopped(sub: StoredSubscription): number {
    const { store, offsets } = this.deps;
    let lag = 0;
    const queues = this.deps.readQueueNums(sub.topic) ?? 0;
    for (let q = 0; q < queues; q++) {
      const max = store.getMaxOffsetInQueue(sub.topic, q);
      lag += Math.max(0, max - (offsets.query(sub.group, sub.topic, q) ?? max));
    }
    return lag;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(
      [...this.#runners.values()].map((r) => r.stop(this.deps.settings.webhookShutdownGraceMs)),
    );
    this.#runners.clear();
  }

  #install(sub: StoredSubscription) {
    this.#subs.set(sub.group, sub);
    if (sub.status !== "active" || this.#closed) return;
    const runner = new Runner(sub, this.deps, this);
    this.#runners.set(sub.group, runner);
    for (const topic of [sub.topic, retryTopicOf(sub.group)]) {
      let set = this.#byTopic.get(topic);
      if (!set) this.#byTopic.set(topic, set = new Set());
      set.add(sub.group);
    }
    runner.start();
  }

  async #uninstall(group: string) {
    const sub = this.#subs.get(group);
    this.#subs.delete(group);
    const runner = this.#runners.get(group);
    this.#runners.delete(group);
    if (sub) {
      for (const topic of [sub.topic, retryTopicOf(group)]) this.#byTopic.get(topic)?.delete(group);
    }
    await runner?.stop(0);
  }
}
