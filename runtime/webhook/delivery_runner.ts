// One subscription's delivery loop: the push consumer delivery_service.ts's header
// describes (read-ahead, admission, attempts, outcomes, offset commits), one per active
// subscription, owned by WebhookService.
import {
  PROPERTY_RETRY_TOPIC,
  PROPERTY_SHARDING_KEY,
} from "../../storage/message/message_const.ts";
import type { DeliveryOutcome } from "../protocol/types.ts";
import { dlqTopicOf, retryTopicOf } from "../pop/group_topics.ts";
import { Cursor, type Entry, messageIdOf, startable } from "./delivery_cursor.ts";
import type { DeliveryLog } from "./delivery_log.ts";
import { deliveryRequest } from "./delivery_request.ts";
import type { StoredSubscription, WebhookDeps, WebhookResponse } from "./delivery_types.ts";
import { retryAfterMs } from "./http_delivery.ts";
import { retryCopy } from "./retry_copy.ts";
import { qstashOutcome, qstashRequest, qstashRetries } from "./qstash_request.ts";
import { secretKey, SigningKey } from "./signing.ts";
import { TokenBucket } from "./token_bucket.ts";

/** What a runner asks of the service that owns it (delivery_service.ts's WebhookService). */
export interface RunnerHost {
  /** Deliveries in flight, all subscriptions together. */
  inFlightTotal: number;
  readonly log: DeliveryLog;
  disable(group: string, reason: string): void;
  notifyFailure(sub: StoredSubscription, event: Record<string, unknown>): void;
}

/** One subscription's delivery loop. Stopped for pause, disable, replay, delete, shutdown. */
export class Runner {
  readonly cursors: Cursor[] = [];
  readonly keys: SigningKey[];
  readonly tags: Set<string> | undefined;
  readonly stats = { delivered: 0, failedAttempts: 0, retried: 0, deadLettered: 0 };
  inFlight = 0;
  #abort = new AbortController();
  #stopped = false;
  #retired = false;
  #throttleUntil = 0;
  readonly #bucket: TokenBucket;
  #wakeAt = Infinity;
  #wakeTimer: ReturnType<typeof setTimeout> | undefined;
  #pumpQueued = false;
  #rotate = 0;
  #idle: (() => void) | undefined;

  constructor(
    readonly sub: StoredSubscription,
    private readonly deps: WebhookDeps,
    private readonly service: RunnerHost,
  ) {
    this.keys = sub.secrets.map((s) => new SigningKey(secretKey(s)));
    this.tags = deps.parseTags(sub.tags);
    this.#bucket = new TokenBucket(sub.ratePerSec, deps.nowMs());
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
          const pick = startable(cursor, this.sub.ordered, now);
          if (pick.entry === undefined) {
            wakeAt = Math.min(wakeAt, pick.wakeAt);
            continue;
          }
          const tokenAt = this.#bucket.take(now);
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

  #start(cursor: Cursor, entry: Entry) {
    entry.state = "inflight";
    this.inFlight++;
    this.service.inFlightTotal++;
    const started = this.deps.nowMs();
    const attempt = entry.record.reconsumeTimes + entry.failures + 1;
    const qstash = this.sub.dialect === "qstash" ? this.deps.qstash : undefined;
    this.deps.transport(
      qstash
        ? qstashRequest(this.sub, qstash, entry, attempt, this.#abort.signal)
        : deliveryRequest(this.sub, this.keys, cursor, entry, attempt, started, this.#abort.signal),
    ).then(
      (response) => this.#finish(cursor, entry, attempt, started, response, undefined),
      (err) => this.#finish(cursor, entry, attempt, started, undefined, err),
    );
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
      this.#qstashSettled(cursor, entry, attempt, response);
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
    if (reconsumeTimes > this.#retryMaxTimes(entry)) {
      log("dead-lettered");
      this.#deadLetter(cursor, entry, reconsumeTimes, response);
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
    const { place, properties } = retryCopy(cursor, entry, topic, this.deps.nowMs(), at);
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

  /** QStash dialect: the message's own retries. */
  #retryMaxTimes(entry: Entry): number {
    const own = this.sub.dialect === "qstash" ? qstashRetries(entry.record) : undefined;
    return own ?? this.deps.retryPolicy(this.sub.group).retryMaxTimes;
  }

  #qstashSettled(c: Cursor, e: Entry, attempt: number, r?: WebhookResponse, dead = false) {
    if (this.sub.dialect !== "qstash" || !this.deps.qstash) return;
    const topic = e.record.properties.get(PROPERTY_RETRY_TOPIC) ?? c.topic;
    const max = this.#retryMaxTimes(e);
    this.deps.qstash.settled(qstashOutcome(this.sub, topic, e, attempt, max, r, dead));
  }

  #deadLetter(
    cursor: Cursor,
    entry: Entry,
    reconsumeTimes: number,
    response: WebhookResponse | undefined,
  ) {
    this.#putCopy(cursor, entry, dlqTopicOf(this.sub.group), reconsumeTimes).then((stored) => {
      if (!stored) return;
      this.stats.deadLettered++;
      this.#qstashSettled(cursor, entry, reconsumeTimes, response, true);
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
