// POP consumption for stateless consumers (reference/rocketmq.md §19): receive a batch
// with an invisible time, then ack, nack or change the invisible time by receipt handle.
//
// State lives in the log, as RocketMQ keeps it: each received message gets a checkpoint
// (CK) record scheduled on the timer wheel for popTime + invisibleTime, addressed to the
// revive topic. An ack cancels that timer (a durable cancel marker); nack and "change
// invisible time" reschedule it. A CK that fires was not acked in time: the revive loop
// puts the message again into %RETRY%{group} with reconsumeTimes + 1, or past the group's
// retryMaxTimes into %DLQ%{group}, keeping its id, topic and properties. Receive reads the
// topic's queues and the group's retry queue from per-(group, queue) pop offsets, persisted
// with the consumer offsets (every offsetPersistIntervalMs and at shutdown).
//
// At-least-once, stated: a crash loses pop-offset progress since the last persist, so
// messages received then are handed out again (with their CKs also still pending, a
// message can come twice); an ack answered OK is durable; an unacked message always
// comes back once its invisible time has passed.
import {
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_UNIQ_KEY,
  REVIVE_TOPIC,
  TIMER_TOPIC,
} from "../storage/message/message_const.ts";
import type { MessageStore } from "../storage/message_store.ts";
import type { MessageRecord } from "../storage/message/record.ts";
import { BrokerError } from "./protocol/errors.ts";
import { type PopMessage, signalOf, type SignalSource } from "./protocol/types.ts";
import { type TimerService } from "./timer_service.ts";
import type { PullHoldService } from "./long_polling.ts";
import { toWireMessage } from "./wire.ts";
import type { BodyText } from "./platform/platform.ts";
import type { Logger } from "./log.ts";
import type { ConsumerGroupConfig } from "../storage/metadata/metadata_store.ts";

/** The revive loop's own progress, kept as a consumer offset of this pseudo group. */
const REVIVE_GROUP = "%REVIVE%";

export const retryTopicOf = (group: string) => `%RETRY%${group}`;
export const dlqTopicOf = (group: string) => `%DLQ%${group}`;

/** What a CK record carries (its body, JSON). */
interface Checkpoint {
  g: string; // group
  t: string; // topic read from (the real topic or the group's retry topic)
  q: number;
  o: number; // queue offset
  c: number; // CommitLog offset of the message
  ord?: 1; // from an orderly group: retried in place, never through the retry topic
}

/** Ordered POP: the one message of a queue out with a consumer, and its failures so far. */
interface OrderlyInFlight {
  handle: string;
  offset: number;
  failures: number;
}

export interface PopDeps {
  store: MessageStore;
  timers: TimerService;
  holds: PullHoldService;
  nowMs: () => number;
  log: Logger;
  newId: () => string;
  storeHost: { ip: Uint8Array; port: number };
  offsets: {
    query(group: string, topic: string, queueId: number): number | undefined;
    commit(group: string, topic: string, queueId: number, offset: number): void;
  };
  groupOf(group: string): ConsumerGroupConfig | undefined;
  /** Delay levels in ms (level N waits delayLevelsMs[N - 1]). */
  delayLevelsMs: readonly number[];
  /** The platform's body decoding (wire.ts). */
  bodyText: BodyText;
}

export interface ReceiveRequest {
  group: string;
  /** Required for broadcasting groups: each client has offsets of its own. */
  clientId?: string;
  topic: string;
  readQueueNums: number;
  max: number;
  invisibleMs: number;
  waitMs: number;
  signal?: SignalSource;
}

/** Why a receive's own holds are released: a constant, so abort() builds no DOMException. */
const RELEASED = "released";

export class PopService {
  #rotation = 0;
  #reviving = false;
  /** Orderly groups: group|topic|queue -> the message out; no other leaves that queue. */
  #orderly = new Map<string, OrderlyInFlight>();
  /** Orderly failures of the message at group|topic|queue@offset (memory; a restart resets). */
  #orderlyFailures = new Map<string, number>();

  constructor(private readonly deps: PopDeps) {}

  async receive(req: ReceiveRequest): Promise<PopMessage[]> {
    const deadline = this.deps.nowMs() + req.waitMs;
    const retry = retryTopicOf(req.group);
    let signal: AbortSignal | undefined;
    for (;;) {
      const out = await this.#popOnce(req, retry);
      const left = deadline - this.deps.nowMs();
      if (out.length > 0 || left <= 0) return out;
      // Read only now that the receive has to wait (SignalSource).
      signal ??= signalOf(req.signal);
      if (signal?.aborted || !this.deps.holds.canHold()) return out;
      const stop = new AbortController();
      const abort = () => stop.abort(RELEASED);
      signal?.addEventListener("abort", abort, { once: true });
      await Promise.race([
        this.deps.holds.hold(req.topic, -1, -1, left, undefined, stop.signal),
        this.deps.holds.hold(retry, -1, -1, left, undefined, stop.signal),
      ]);
      stop.abort(RELEASED); // release the other hold
      signal?.removeEventListener("abort", abort);
    }
  }

  async #popOnce(req: ReceiveRequest, retry: string): Promise<PopMessage[]> {
    const group = this.deps.groupOf(req.group);
    if (group?.messageModel === "BROADCASTING") return this.#popBroadcast(req);
    if (group?.orderly) return this.#popOrderly(req);
    const { store } = this.deps;
    const sources = [...Array(req.readQueueNums).keys()].map((q) => ({ topic: req.topic, q }));
    sources.push({ topic: retry, q: 0 });
    const start = this.#rotation++ % sources.length;
    const picked: { topic: string; q: number; offset: number; record: MessageRecord }[] = [];
    for (let i = 0; i < sources.length && picked.length < req.max; i++) {
      const { topic, q } = sources[(start + i) % sources.length];
      const popKey = `%POP%${req.group}`;
      let offset = this.deps.offsets.query(popKey, topic, q) ??
        this.deps.offsets.query(req.group, topic, q) ??
        store.getMinOffsetInQueue(topic, q);
      const got = store.getMessage(topic, q, offset, {
        maxMsgNums: req.max - picked.length,
        maxBytes: 4 * 1024 * 1024,
      });
      if (got.status === "OFFSET_TOO_SMALL") offset = got.nextBeginOffset;
      for (const m of got.messages) {
        picked.push({ topic, q, offset: m.queueOffset, record: m.record });
      }
      if (
        got.messages.length > 0 || got.status === "OFFSET_TOO_SMALL" ||
        got.status === "NO_MATCHED_MESSAGE"
      ) {
        this.deps.offsets.commit(popKey, topic, q, Math.max(offset, got.nextBeginOffset));
      }
    }
    if (picked.length === 0) return [];
    const popTime = this.deps.nowMs();
    // One CK per message, all written in this turn (one write, one fdatasync).
    const cks = picked.map((p) =>
      this.#scheduleCheckpoint(
        req.group,
        p.topic,
        p.q,
        p.offset,
        p.record.physicalOffset,
        popTime + req.invisibleMs,
      )
    );
    const ids = await Promise.all(cks);
    return picked.map((p, i) => {
      const wire = toWireMessage(p.record, p.offset, this.deps.bodyText);
      const original = p.record.properties.get(PROPERTY_RETRY_TOPIC);
      return {
        ...wire,
        topic: original ?? wire.topic,
        receiptHandle: ids[i],
        invisibleUntil: popTime + req.invisibleMs,
      };
    });
  }

  /**
   * Broadcasting: every member gets every message, from offsets of its own (keyed by its
   * clientId). As in RocketMQ, broadcast messages are not retried: no checkpoint, nothing
   * to ack (receiptHandle is empty).
   */
  #popBroadcast(req: ReceiveRequest): PopMessage[] {
    if (!req.clientId) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot receive from broadcasting group ${req.group} without clientId`,
      );
    }
    const popKey = `%POP%${req.group}@${req.clientId}`;
    const out: PopMessage[] = [];
    const start = this.#rotation++;
    for (let i = 0; i < req.readQueueNums && out.length < req.max; i++) {
      const q = (start + i) % req.readQueueNums;
      const min = this.deps.store.getMinOffsetInQueue(req.topic, q);
      const offset = Math.max(this.deps.offsets.query(popKey, req.topic, q) ?? min, min);
      const got = this.deps.store.getMessage(req.topic, q, offset, {
        maxMsgNums: req.max - out.length,
        maxBytes: 4 * 1024 * 1024,
      });
      for (const m of got.messages) {
        out.push({
          ...toWireMessage(m.record, m.queueOffset, this.deps.bodyText),
          receiptHandle: "",
          invisibleUntil: 0,
        });
      }
      if (got.messages.length > 0) {
        this.deps.offsets.commit(popKey, req.topic, q, got.nextBeginOffset);
      }
    }
    return out;
  }

  /**
   * Ordered POP: at most one message per queue is out at a time, and the pop offset of a
   * queue moves only when that message is acked (or buried after retryMaxTimes failures),
   * so a failing message is retried in place and never overtaken by the next one.
   */
  async #popOrderly(req: ReceiveRequest): Promise<PopMessage[]> {
    const { store } = this.deps;
    const popKey = `%POP%${req.group}`;
    const picked: { q: number; offset: number; record: MessageRecord; failures: number }[] = [];
    const start = this.#rotation++;
    for (let i = 0; i < req.readQueueNums && picked.length < req.max; i++) {
      const q = (start + i) % req.readQueueNums;
      const key = `${req.group}|${req.topic}|${q}`;
      if (this.#orderly.has(key)) continue; // its message is out
      let offset = this.deps.offsets.query(popKey, req.topic, q) ??
        this.deps.offsets.query(req.group, req.topic, q) ??
        store.getMinOffsetInQueue(req.topic, q);
      offset = Math.max(offset, store.getMinOffsetInQueue(req.topic, q));
      const got = store.getMessage(req.topic, q, offset, {
        maxMsgNums: 1,
        maxBytes: 4 * 1024 * 1024,
      });
      const m = got.messages[0];
      if (!m) continue;
      const failures = this.#orderlyFailures.get(`${key}@${m.queueOffset}`) ?? 0;
      // Reserved now, before the await below, so a concurrent receive skips this queue.
      this.#orderly.set(key, { handle: "", offset: m.queueOffset, failures });
      picked.push({ q, offset: m.queueOffset, record: m.record, failures });
    }
    if (picked.length === 0) return [];
    const popTime = this.deps.nowMs();
    const ids = await Promise.all(
      picked.map((p) =>
        this.#scheduleCheckpoint(
          req.group,
          req.topic,
          p.q,
          p.offset,
          p.record.physicalOffset,
          popTime + req.invisibleMs,
          true,
        )
      ),
    ).catch((err) => {
      for (const p of picked) this.#orderly.delete(`${req.group}|${req.topic}|${p.q}`);
      throw err;
    });
    return picked.map((p, i) => {
      this.#orderly.set(`${req.group}|${req.topic}|${p.q}`, {
        handle: ids[i],
        offset: p.offset,
        failures: p.failures,
      });
      const wire = toWireMessage(p.record, p.offset, this.deps.bodyText);
      return {
        ...wire,
        reconsumeTimes: p.record.reconsumeTimes + p.failures,
        receiptHandle: ids[i],
        invisibleUntil: popTime + req.invisibleMs,
      };
    });
  }

  /** An ordered message settled: the queue moves on to the next one. */
  #orderlyDone(ck: Checkpoint) {
    const key = `${ck.g}|${ck.t}|${ck.q}`;
    const out = this.#orderly.get(key);
    if (out && out.offset === ck.o) this.#orderly.delete(key);
    this.#orderlyFailures.delete(`${key}@${ck.o}`);
    const popKey = `%POP%${ck.g}`;
    const current = this.deps.offsets.query(popKey, ck.t, ck.q) ?? 0;
    if (ck.o + 1 > current) this.deps.offsets.commit(popKey, ck.t, ck.q, ck.o + 1);
  }

  /** An ordered message was not acked in time: it is handed out again, in place. */
  #orderlyFailed(ck: Checkpoint): Promise<unknown> {
    const key = `${ck.g}|${ck.t}|${ck.q}`;
    const popKey = `%POP%${ck.g}`;
    if ((this.deps.offsets.query(popKey, ck.t, ck.q) ?? 0) > ck.o) return Promise.resolve(); // settled before
    const out = this.#orderly.get(key);
    if (out && out.offset === ck.o) this.#orderly.delete(key);
    const failures = (this.#orderlyFailures.get(`${key}@${ck.o}`) ?? 0) + 1;
    if (failures <= (this.deps.groupOf(ck.g)?.retryMaxTimes ?? 16)) {
      this.#orderlyFailures.set(`${key}@${ck.o}`, failures);
      this.deps.holds.arriving(ck.t, ck.q, Number.MAX_SAFE_INTEGER); // wake receivers: it is back
      return Promise.resolve();
    }
    // Past the limit it is buried, so the queue can move on.
    const original = this.deps.store.lookMessageByOffset(ck.c);
    this.#orderlyDone(ck);
    if (!original) return Promise.resolve();
    return this.#bury(ck.g, original, original.reconsumeTimes + failures);
  }

  async #scheduleCheckpoint(
    group: string,
    topic: string,
    q: number,
    offset: number,
    commitLogOffset: number,
    deliverMs: number,
    orderly = false,
  ): Promise<string> {
    const id = this.deps.newId();
    const ck: Checkpoint = {
      g: group,
      t: topic,
      q,
      o: offset,
      c: commitLogOffset,
      ...(orderly ? { ord: 1 as const } : {}),
    };
    await this.deps.store.putMessage({
      topic: TIMER_TOPIC,
      queueId: 0,
      body: new TextEncoder().encode(JSON.stringify(ck)),
      properties: new Map([
        [PROPERTY_UNIQ_KEY, id],
        [PROPERTY_REAL_TOPIC, REVIVE_TOPIC],
        [PROPERTY_REAL_QUEUE_ID, "0"],
        [PROPERTY_TIMER_DELIVER_MS, String(deliverMs)],
      ]),
      bornTimestamp: this.deps.nowMs(),
      bornHost: this.deps.storeHost,
      storeHost: this.deps.storeHost,
    });
    return id;
  }

  /** Acknowledges a received message: it will not come back. */
  async ack(group: string, handle: string): Promise<void> {
    const ck = this.#checkpointOf(group, handle);
    const outcome = await this.#settle(() => this.deps.timers.cancel(handle, REVIVE_TOPIC));
    if (outcome === "CANCELLED" && ck.ord) this.#orderlyDone(ck);
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "RECEIPT_HANDLE_EXPIRED",
        `Cannot ack: the invisible time of ${handle} has passed and the message is being delivered again`,
      );
    }
  }

  /**
   * Gives the message back: it returns after `delayMs`, or by default after the group's
   * retry ladder — its retryBackoffMs list, else RocketMQ's delay level 3 + reconsumeTimes
   * (10 s, 30 s, 1 min, … 2 h) — counting a reconsume.
   */
  async nack(group: string, handle: string, delayMs: number | undefined): Promise<void> {
    const ck = this.#checkpointOf(group, handle);
    const reconsumeTimes = this.deps.store.lookMessageByOffset(ck.c)?.reconsumeTimes ?? 0;
    await this.changeInvisibleTime(group, handle, delayMs ?? this.backoffMs(group, reconsumeTimes));
  }

  /** The retry ladder: the delay before delivery number `reconsumeTimes + 2`. */
  backoffMs(group: string, reconsumeTimes: number): number {
    const custom = this.deps.groupOf(group)?.retryBackoffMs;
    if (custom && custom.length > 0) return custom[Math.min(reconsumeTimes, custom.length - 1)];
    const levels = this.deps.delayLevelsMs;
    return levels[Math.min(3 + reconsumeTimes, levels.length) - 1];
  }

  /** Moves the moment the message comes back to now + invisibleMs. The handle stays valid. */
  async changeInvisibleTime(group: string, handle: string, invisibleMs: number): Promise<number> {
    this.#checkpointOf(group, handle);
    const until = this.deps.nowMs() + invisibleMs;
    const outcome = await this.#settle(() =>
      this.deps.timers.reschedule(handle, until, REVIVE_TOPIC)
    );
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "RECEIPT_HANDLE_EXPIRED",
        `Cannot change ${handle}: its invisible time has passed and the message is being delivered again`,
      );
    }
    return until;
  }

  #checkpointOf(group: string, handle: string): Checkpoint {
    if (!/^[0-9A-F]{32}$/.test(handle)) {
      throw new BrokerError(
        "RECEIPT_HANDLE_UNKNOWN",
        `Unknown receipt handle ${JSON.stringify(handle.slice(0, 64))}`,
      );
    }
    const record = this.deps.timers.find(handle, REVIVE_TOPIC);
    const ck = record ? parseCheckpoint(record.body) : undefined;
    if (!ck || ck.g !== group) {
      throw new BrokerError(
        "RECEIPT_HANDLE_UNKNOWN",
        `Unknown receipt handle ${handle} for group ${group}`,
      );
    }
    return ck;
  }

  /** A cancel of a CK that is no longer pending means it was settled before: acked twice. */
  async #settle<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      if (err instanceof BrokerError && err.code === "MESSAGE_NOT_FOUND") {
        throw new BrokerError(
          "RECEIPT_HANDLE_SETTLED",
          "Cannot settle this receipt handle again: it was already acknowledged",
        );
      }
      throw err;
    }
  }

  /** Dispatch's notice that CKs fired: bring their messages back, or bury them. */
  arriving(): void {
    if (this.#reviving) return;
    this.#reviving = true;
    this.#revive().catch((err) => this.deps.log("error", "revive failed", { err: String(err) }))
      .finally(() => this.#reviving = false);
  }

  async #revive() {
    const { store } = this.deps;
    for (;;) {
      const from = this.deps.offsets.query(REVIVE_GROUP, REVIVE_TOPIC, 0) ??
        store.getMinOffsetInQueue(REVIVE_TOPIC, 0);
      const got = store.getMessage(REVIVE_TOPIC, 0, from, {
        maxMsgNums: 256,
        maxBytes: 4 * 1024 * 1024,
      });
      if (got.messages.length === 0) {
        if (got.status === "OFFSET_TOO_SMALL") {
          this.deps.offsets.commit(REVIVE_GROUP, REVIVE_TOPIC, 0, got.nextBeginOffset);
        }
        return;
      }
      await Promise.all(got.messages.map((m) => this.#reviveOne(m.record)));
      this.deps.offsets.commit(REVIVE_GROUP, REVIVE_TOPIC, 0, got.nextBeginOffset);
    }
  }

  #reviveOne(ckRecord: MessageRecord): Promise<unknown> {
    const ck = parseCheckpoint(ckRecord.body);
    if (ck?.ord) return this.#orderlyFailed(ck);
    const original = ck ? this.deps.store.lookMessageByOffset(ck.c) : undefined;
    if (!ck || !original) return Promise.resolve(); // retention took it: nothing to bring back
    const reconsumeTimes = original.reconsumeTimes + 1;
    if (reconsumeTimes > (this.deps.groupOf(ck.g)?.retryMaxTimes ?? 16)) {
      return this.#bury(ck.g, original, reconsumeTimes);
    }
    return this.#requeue(ck.g, original, reconsumeTimes, false);
  }

  /** Past retryMaxTimes: to %DLQ%{group}, keeping id, body, properties, original topic. */
  #bury(group: string, original: MessageRecord, reconsumeTimes: number): Promise<unknown> {
    return this.#requeue(group, original, reconsumeTimes, true);
  }

  #requeue(
    group: string,
    original: MessageRecord,
    reconsumeTimes: number,
    dead: boolean,
  ): Promise<unknown> {
    const properties = new Map(original.properties);
    if (!properties.has(PROPERTY_RETRY_TOPIC)) properties.set(PROPERTY_RETRY_TOPIC, original.topic);
    if (dead) properties.set(PROPERTY_DLQ_ORIGIN_TOPIC, properties.get(PROPERTY_RETRY_TOPIC)!);
    return this.deps.store.putMessage({
      topic: dead ? dlqTopicOf(group) : retryTopicOf(group),
      queueId: 0,
      body: original.body,
      flag: original.flag,
      properties,
      bornTimestamp: original.bornTimestamp,
      bornHost: original.bornHost,
      storeHost: this.deps.storeHost,
      reconsumeTimes,
    });
  }
}

function parseCheckpoint(body: Uint8Array): Checkpoint | undefined {
  try {
    const v = JSON.parse(new TextDecoder().decode(body));
    return typeof v?.g === "string" && Number.isSafeInteger(v?.c) ? v : undefined;
  } catch {
    return undefined;
  }
}
