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
import {
  PROPERTY_CONTENT_TYPE,
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_KEYS,
  PROPERTY_ORIGIN_QUEUE_ID,
  PROPERTY_ORIGIN_QUEUE_OFFSET,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_SHARDING_KEY,
  PROPERTY_TAGS,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_UNIQ_KEY,
  TIMER_TOPIC,
} from "../../storage/message/message_const.ts";
import type { MessageStore } from "../../storage/message_store.ts";
import type { MessageRecord } from "../../storage/message/record.ts";
import type {
  DeliveryOutcome,
  SubscriptionStats,
  SubscriptionStatus,
  SubscriptionView,
} from "../protocol/types.ts";
import type { Logger } from "../log.ts";
import { dlqTopicOf, retryTopicOf } from "../pop_service.ts";
import { DeliveryLog } from "./delivery_log.ts";
import { retryAfterMs } from "./http_delivery.ts";
import { maskSecret, secretKey, signatureHeader, SigningKey } from "./signing.ts";

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
  timeoutMs: number;
  signal: AbortSignal;
}

export interface WebhookResponse {
  status: number;
  /** The Retry-After header as sent, if any. */
  retryAfter: string | null;
  /** The first bytes of the response body (for the delivery log). */
  bodyPrefix: string;
}

/** Sends one request to a subscription's endpoint; rejects on timeout, refused address or
 * connection failure with an Error whose message goes to the delivery log. */
export type WebhookTransport = (request: WebhookRequest) => Promise<WebhookResponse>;

export interface WebhookSettings {
  webhookReadAheadPerQueue: number;
  /** Messages and bytes read per refill of one cursor. */
  webhookReadBatchNums: number;
  webhookReadBytesMax: number;
  /** Refills per cursor per pump, so one busy queue cannot hold the event loop. */
  webhookRefillsPerPump: number;
  /** A retry copy that could not be stored is tried again after this long, ms. */
  webhookStoreRetryMs: number;
  webhookRetryAfterMaxMs: number;
  webhookLogEntriesMax: number;
  webhookShutdownGraceMs: number;
}

/** A subscription as stored: the API input with every default applied and secrets in full. */
export interface StoredSubscription {
  group: string;
  topic: string;
  tags: string;
  url: string;
  secrets: string[];
  headers: Record<string, string>;
  timeoutMs: number;
  maxConcurrency: number;
  ratePerSec: number;
  ordered: boolean;
  failureCallbackUrl: string | null;
  status: SubscriptionStatus;
  statusReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface RetryPolicy {
  retryMaxTimes: number;
  /** The group's own backoff list, or null for RocketMQ's ladder. */
  backoffList: number[] | null;
  /** The delay before the delivery after `reconsumeTimes` failed ones. */
  backoffMs(reconsumeTimes: number): number;
}

export interface WebhookDeps {
  store: MessageStore;
  offsets: {
    query(group: string, topic: string, queueId: number): number | undefined;
    commit(group: string, topic: string, queueId: number, offset: number): void;
  };
  transport: WebhookTransport;
  nowMs: () => number;
  log: Logger;
  storeHost: { ip: Uint8Array; port: number };
  settings: WebhookSettings;
  /** Read queues of a topic, or undefined when it does not exist (any more). */
  readQueueNums(topic: string): number | undefined;
  /** The group's retry policy (the subscription's group carries it). */
  retryPolicy(group: string): RetryPolicy;
  /** The tag filter of an expression; undefined for "*". */
  parseTags(expression: string): Set<string> | undefined;
  /** Persists a status change (410 disables). */
  saveStatus(group: string, status: SubscriptionStatus, reason: string | null): Promise<void>;
}

type EntryState = "waiting" | "inflight" | "settled";

interface Entry {
  offset: number;
  record: MessageRecord;
  /** messageIdOf(record): the webhook-id of every attempt. */
  id: string;
  key: string;
  state: EntryState;
  /** Failed attempts made in place (ordered mode). */
  failures: number;
  /** Not started again before this time (ordered backoff, store retry). */
  notBefore: number;
}

class Cursor {
  /** Read-ahead, in queue order; settled entries leave from the front. */
  window: Entry[] = [];
  committed: number;
  constructor(
    readonly topic: string,
    readonly queueId: number,
    readonly retry: boolean,
    public next: number,
  ) {
    this.committed = next;
  }

  get commitOffset(): number {
    return this.window.length > 0 ? this.window[0].offset : this.next;
  }
}

/** One subscription's delivery loop. Stopped for pause, disable, replay, delete, shutdown. */
class Runner {
  readonly cursors: Cursor[] = [];
  readonly keys: SigningKey[];
  readonly tags: Set<string> | undefined;
  readonly stats = { delivered: 0, failedAttempts: 0, retried: 0, deadLettered: 0 };
  inFlight = 0;
  #abort = new AbortController();
  #stopped = false;
  #retired = false;
  #throttleUntil = 0;
  #tokens: number;
  #tokensAt: number;
  #wakeAt = Infinity;
  #wakeTimer: ReturnType<typeof setTimeout> | undefined;
  #pumpQueued = false;
  #rotate = 0;
  #idle: (() => void) | undefined;

  constructor(
    readonly sub: StoredSubscription,
    private readonly deps: WebhookDeps,
    private readonly service: WebhookService,
  ) {
    this.keys = sub.secrets.map((s) => new SigningKey(secretKey(s)));
    this.tags = deps.parseTags(sub.tags);
    this.#tokens = sub.ratePerSec;
    this.#tokensAt = deps.nowMs();
  }

  start() {
    const { store, offsets } = this.deps;
    const group = this.sub.group;
    const queues = this.deps.readQueueNums(this.sub.topic) ?? 0;
    for (let q = 0; q < queues; q++) {
      // No committed offset (a queue added since, or lost): what was stored after the
      // subscription was created.
      const from = offsets.query(group, this.sub.topic, q) ??
        store.getOffsetInQueueByTime(this.sub.topic, q, this.sub.createdAt);
      this.cursors.push(new Cursor(this.sub.topic, q, false, from));
    }
    const retry = retryTopicOf(group);
    const from = offsets.query(group, retry, 0) ?? store.getMinOffsetInQueue(retry, 0);
    this.cursors.push(new Cursor(retry, 0, true, from));
    this.pump();
  }

  /** Stops starting deliveries; waits up to graceMs for those in flight, then aborts them. */
  async stop(graceMs: number): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#wakeTimer);
    if (this.inFlight > 0 && graceMs > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#idle = resolve),
        new Promise<void>((resolve) => timer = setTimeout(resolve, graceMs)),
      ]);
      clearTimeout(timer);
    }
    this.#abort.abort(new Error("subscription stopped"));
    this.#retired = true;
  }

  arriving(topic: string, queueId: number) {
    if (this.cursors.some((c) => c.topic === topic && c.queueId === queueId)) this.schedulePump();
  }

  schedulePump() {
    if (this.#pumpQueued || this.#stopped) return;
    this.#pumpQueued = true;
    queueMicrotask(() => {
      this.#pumpQueued = false;
      this.pump();
    });
  }

  pump() {
    if (this.#stopped) return;
    const now = this.deps.nowMs();
    for (const cursor of this.cursors) this.#refill(cursor);
    let wakeAt = this.#throttleUntil > now ? this.#throttleUntil : Infinity;
    if (wakeAt === Infinity) {
      let progress = true;
      while (progress && this.inFlight < this.sub.maxConcurrency) {
        progress = false;
        const n = this.cursors.length;
        for (let i = 0; i < n && this.inFlight < this.sub.maxConcurrency; i++) {
          const cursor = this.cursors[(this.#rotate + i) % n];
          const pick = this.#startable(cursor, now);
          if (pick.entry === undefined) {
            wakeAt = Math.min(wakeAt, pick.wakeAt);
            continue;
          }
          const tokenAt = this.#takeToken(now);
          if (tokenAt > now) {
            wakeAt = Math.min(wakeAt, tokenAt);
            progress = false;
            break;
          }
          this.#start(cursor, pick.entry);
          progress = true;
        }
        this.#rotate = (this.#rotate + 1) % Math.max(1, n);
      }
    }
    this.#wake(wakeAt);
  }

  #wake(at: number) {
    if (at === Infinity || at >= this.#wakeAt) return;
    clearTimeout(this.#wakeTimer);
    this.#wakeAt = at;
    this.#wakeTimer = setTimeout(() => {
      this.#wakeAt = Infinity;
      this.pump();
    }, Math.max(0, at - this.deps.nowMs()));
  }

  #refill(cursor: Cursor) {
    const { store } = this.deps;
    const { webhookReadAheadPerQueue: readAhead, webhookReadBatchNums: batch } = this.deps.settings;
    // Every settle pumps; reading then would fetch the one message that left the window,
    // a CQ read and a CommitLog read per delivery. Waiting for half the window (at most a
    // batch) to drain makes each read a batch, and the window still holds far more than
    // maxConcurrency entries.
    const lowWater = Math.max(1, Math.min(batch, Math.ceil(readAhead / 2)));
    for (let i = 0; i < this.deps.settings.webhookRefillsPerPump; i++) {
      const room = readAhead - cursor.window.length;
      if (room < lowWater) return;
      // Caught up: nothing to read until arriving() pumps again.
      if (cursor.next === store.getMaxOffsetInQueue(cursor.topic, cursor.queueId)) return;
      const max = Math.min(room, batch);
      const got = store.getMessage(cursor.topic, cursor.queueId, cursor.next, {
        maxMsgNums: max,
        maxBytes: this.deps.settings.webhookReadBytesMax,
        filter: cursor.retry || !this.tags ? undefined : { tags: this.tags },
      });
      if (got.status === "OFFSET_TOO_SMALL") {
        // Retention deleted messages this subscription never settled: say so, move on.
        this.deps.log("warn", "webhook subscription fell behind retention", {
          group: this.sub.group,
          topic: cursor.topic,
          queueId: cursor.queueId,
          from: cursor.next,
          to: got.minOffset,
        });
        cursor.next = got.minOffset;
        continue;
      }
      if (got.status === "OFFSET_OVERFLOW_BADLY") {
        cursor.next = got.maxOffset;
        return;
      }
      for (const m of got.messages) {
        cursor.window.push({
          offset: m.queueOffset,
          record: m.record,
          id: messageIdOf(m.record),
          key: this.sub.ordered
            ? m.record.properties.get(PROPERTY_SHARDING_KEY) ?? ""
            : String(m.queueOffset),
          state: "waiting",
          failures: 0,
          notBefore: 0,
        });
      }
      const advanced = got.nextBeginOffset > cursor.next;
      cursor.next = Math.max(cursor.next, got.nextBeginOffset);
      if (got.messages.length === 0) {
        this.#commit(cursor); // filtered-out messages settle by being skipped
        if (!advanced || got.nextBeginOffset >= got.maxOffset) return;
      } else if (got.messages.length < max) return;
    }
  }

  /** The next entry of this cursor that may start now, or when one could. */
  #startable(cursor: Cursor, now: number): { entry?: Entry; wakeAt: number } {
    let wakeAt = Infinity;
    const blocked = this.sub.ordered ? new Set<string>() : undefined;
    for (const entry of cursor.window) {
      if (entry.state === "settled") continue;
      if (blocked) {
        if (blocked.has(entry.key)) continue;
        blocked.add(entry.key);
      }
      if (entry.state !== "waiting") continue;
      if (entry.notBefore > now) {
        wakeAt = Math.min(wakeAt, entry.notBefore);
        continue;
      }
      return { entry, wakeAt };
    }
    return { wakeAt };
  }

  /** Token bucket: now if a token was taken, else when the next one is due. */
  #takeToken(now: number): number {
    const rate = this.sub.ratePerSec;
    if (rate <= 0) return now;
    this.#tokens = Math.min(rate, this.#tokens + (now - this.#tokensAt) * rate / 1000);
    this.#tokensAt = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return now;
    }
    return now + Math.ceil((1 - this.#tokens) * 1000 / rate);
  }

  #start(cursor: Cursor, entry: Entry) {
    entry.state = "inflight";
    this.inFlight++;
    this.service.inFlightTotal++;
    const started = this.deps.nowMs();
    const attempt = entry.record.reconsumeTimes + entry.failures + 1;
    const request = this.#request(cursor, entry, attempt, started);
    this.deps.transport(request).then(
      (response) => this.#finish(cursor, entry, attempt, started, response, undefined),
      (err) => this.#finish(cursor, entry, attempt, started, undefined, err),
    );
  }

  #request(cursor: Cursor, entry: Entry, attempt: number, nowMs: number): WebhookRequest {
    const record = entry.record;
    const props = record.properties;
    const id = entry.id;
    const timestamp = Math.floor(nowMs / 1000);
    const headers: Record<string, string> = {
      ...this.sub.headers,
      "content-type": props.get(PROPERTY_CONTENT_TYPE) ?? "application/octet-stream",
      "user-agent": "edgemq-webhook/1",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signatureHeader(this.keys, id, timestamp, record.body),
      "mq-message-id": id,
      "mq-topic": cursor.retry ? props.get(PROPERTY_RETRY_TOPIC) ?? this.sub.topic : cursor.topic,
      "mq-queue-id": props.get(PROPERTY_ORIGIN_QUEUE_ID) ?? String(cursor.queueId),
      "mq-queue-offset": props.get(PROPERTY_ORIGIN_QUEUE_OFFSET) ?? String(entry.offset),
      "mq-reconsume-times": String(attempt - 1),
      "mq-born-timestamp": String(record.bornTimestamp),
    };
    const tag = props.get(PROPERTY_TAGS);
    if (tag !== undefined) headers["mq-tag"] = tag;
    const keys = props.get(PROPERTY_KEYS);
    if (keys !== undefined) headers["mq-keys"] = keys;
    const sharding = props.get(PROPERTY_SHARDING_KEY);
    if (sharding !== undefined) headers["mq-sharding-key"] = sharding;
    return {
      url: this.sub.url,
      headers,
      body: record.body,
      timeoutMs: this.sub.timeoutMs,
      signal: this.#abort.signal,
    };
  }

  #finish(
    cursor: Cursor,
    entry: Entry,
    attempt: number,
    started: number,
    response: WebhookResponse | undefined,
    err: unknown,
  ) {
    this.inFlight--;
    this.service.inFlightTotal--;
    if (this.inFlight === 0) this.#idle?.();
    const now = this.deps.nowMs();
    const status = response?.status ?? 0;
    const log = (outcome: DeliveryOutcome) =>
      this.service.log.add({
        group: this.sub.group,
        messageId: entry.id,
        topic: cursor.retry
          ? entry.record.properties.get(PROPERTY_RETRY_TOPIC) ?? cursor.topic
          : cursor.topic,
        queueId: cursor.queueId,
        queueOffset: entry.offset,
        attempt,
        at: started,
        status,
        outcome,
        ...(err !== undefined ? { error: String((err as Error)?.message ?? err) } : {}),
        latencyMs: now - started,
        ...(response ? { response: response.bodyPrefix } : {}),
      });
    if (status >= 200 && status < 300) {
      log("delivered");
      this.stats.delivered++;
      this.#settle(cursor, entry);
      return;
    }
    if (this.#retired) return; // aborted by a stop: redelivered from the committed offset
    entry.state = "waiting";
    if (this.#stopped) return;
    if (status === 410) {
      log("disabled");
      this.service.disable(
        this.sub.group,
        `The endpoint answered 410 Gone at ${new Date(now).toISOString()}`,
      );
      return;
    }
    this.stats.failedAttempts++;
    let delayMs: number | undefined;
    let outcome: DeliveryOutcome = "retry";
    if (status === 429 || status === 503) {
      const asked = retryAfterMs(response?.retryAfter ?? undefined, now);
      if (asked !== undefined) {
        delayMs = Math.min(asked, this.deps.settings.webhookRetryAfterMaxMs);
        this.#throttleUntil = Math.max(this.#throttleUntil, now + delayMs);
        outcome = "throttled";
      }
    }
    const policy = this.deps.retryPolicy(this.sub.group);
    const reconsumeTimes = entry.record.reconsumeTimes + entry.failures + 1;
    if (reconsumeTimes > policy.retryMaxTimes) {
      log("dead-lettered");
      this.#deadLetter(cursor, entry, reconsumeTimes);
      return;
    }
    log(outcome);
    this.stats.retried++;
    const backoff = delayMs ?? policy.backoffMs(reconsumeTimes - 1);
    if (this.sub.ordered) {
      entry.failures++;
      entry.notBefore = now + backoff;
      this.pump();
      return;
    }
    this.#putCopy(cursor, entry, retryTopicOf(this.sub.group), reconsumeTimes, now + backoff);
  }

  /** The message again, in the retry or dead-letter topic, then the original is settled. */
  #putCopy(
    cursor: Cursor,
    entry: Entry,
    topic: string,
    reconsumeTimes: number,
    at?: number,
  ): Promise<boolean> {
    const record = entry.record;
    const properties = new Map(record.properties);
    if (!properties.has(PROPERTY_RETRY_TOPIC)) properties.set(PROPERTY_RETRY_TOPIC, record.topic);
    if (!properties.has(PROPERTY_ORIGIN_QUEUE_ID)) {
      properties.set(PROPERTY_ORIGIN_QUEUE_ID, String(cursor.queueId));
      properties.set(PROPERTY_ORIGIN_QUEUE_OFFSET, String(entry.offset));
    }
    let place = { topic, queueId: 0 };
    if (at !== undefined && at > this.deps.nowMs()) {
      properties.set(PROPERTY_REAL_TOPIC, topic);
      properties.set(PROPERTY_REAL_QUEUE_ID, "0");
      properties.set(PROPERTY_TIMER_DELIVER_MS, String(at));
      place = { topic: TIMER_TOPIC, queueId: 0 };
    }
    if (topic.startsWith("%DLQ%")) {
      properties.set(PROPERTY_DLQ_ORIGIN_TOPIC, properties.get(PROPERTY_RETRY_TOPIC)!);
    }
    entry.state = "inflight"; // held until the copy is stored
    return this.deps.store.putMessage({
      ...place,
      body: record.body,
      flag: record.flag,
      properties,
      bornTimestamp: record.bornTimestamp,
      bornHost: record.bornHost,
      storeHost: this.deps.storeHost,
      reconsumeTimes,
    }).then(
      () => {
        this.#settle(cursor, entry);
        return true;
      },
      (err) => {
        this.deps.log("warn", "webhook retry copy not stored; trying again", {
          group: this.sub.group,
          err: String(err),
        });
        entry.state = "waiting";
        entry.notBefore = this.deps.nowMs() + this.deps.settings.webhookStoreRetryMs;
        this.schedulePump();
        return false;
      },
    );
  }

  #deadLetter(cursor: Cursor, entry: Entry, reconsumeTimes: number) {
    this.#putCopy(cursor, entry, dlqTopicOf(this.sub.group), reconsumeTimes).then((stored) => {
      if (!stored) return;
      this.stats.deadLettered++;
      this.service.notifyFailure(this.sub, {
        type: "message.dead_lettered",
        group: this.sub.group,
        topic: entry.record.properties.get(PROPERTY_RETRY_TOPIC) ?? entry.record.topic,
        messageId: entry.id,
        attempts: reconsumeTimes,
        at: this.deps.nowMs(),
      });
    });
  }

  #settle(cursor: Cursor, entry: Entry) {
    entry.state = "settled";
    if (this.#retired) return;
    while (cursor.window.length > 0 && cursor.window[0].state === "settled") cursor.window.shift();
    this.#commit(cursor);
    this.schedulePump();
  }

  #commit(cursor: Cursor) {
    const offset = cursor.commitOffset;
    if (offset === cursor.committed || this.#retired) return;
    cursor.committed = offset;
    this.deps.offsets.commit(this.sub.group, cursor.topic, cursor.queueId, offset);
  }

  lag(): number {
    let lag = 0;
    for (const c of this.cursors) {
      lag += Math.max(0, this.deps.store.getMaxOffsetInQueue(c.topic, c.queueId) - c.commitOffset);
    }
    return lag;
  }
}

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

/** The message id (UNIQ_KEY) the producer got; the webhook-id of every attempt. */
export function messageIdOf(record: MessageRecord): string {
  return record.properties.get(PROPERTY_UNIQ_KEY) ??
    record.physicalOffset.toString(16).toUpperCase().padStart(16, "0");
}
