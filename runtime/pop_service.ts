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
//
// This file receives and settles; the parts are in runtime/pop/: the CK record
// (checkpoint.ts), receipt handles (receipt.ts), ordered POP (orderly.ts), the revive loop
// (revive.ts) and retry/DLQ routing (requeue.ts).
import {
  PROPERTY_RETRY_TOPIC,
  PROPERTY_UNIQ_KEY,
  REVIVE_TOPIC,
} from "../storage/message/message_const.ts";
import type { MessageRecord } from "../storage/message/record.ts";
import { BrokerError } from "./protocol/errors.ts";
import { type PopMessage, signalOf } from "./protocol/types.ts";
import { toWireMessage } from "./wire.ts";
import { scheduleCheckpoint } from "./pop/checkpoint.ts";
import { popOffsetGroupOf, retryTopicOf } from "./pop/group_topics.ts";
import { OrderlyPop } from "./pop/orderly.ts";
import type { PopDeps, ReceiveRequest } from "./pop/pop_types.ts";
import { checkpointOf, settle } from "./pop/receipt.ts";
import { ReviveLoop } from "./pop/revive.ts";

export type { PopDeps, ReceiveRequest } from "./pop/pop_types.ts";

/** Why a receive's own holds are released: a constant, so abort() builds no DOMException. */
const RELEASED = "released";

export class PopService {
  #rotation = 0;
  /** Ordered POP's queues in flight (orderly groups). */
  readonly #orderly: OrderlyPop;
  readonly #revive: ReviveLoop;

  constructor(private readonly deps: PopDeps) {
    this.#orderly = new OrderlyPop(deps);
    this.#revive = new ReviveLoop(deps, this.#orderly);
  }

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
    if (group?.orderly) return this.#orderly.pop(req, this.#rotation++);
    const { store } = this.deps;
    const sources = [...Array(req.readQueueNums).keys()].map((q) => ({ topic: req.topic, q }));
    sources.push({ topic: retry, q: 0 });
    const start = this.#rotation++ % sources.length;
    const picked: { topic: string; q: number; offset: number; record: MessageRecord }[] = [];
    for (let i = 0; i < sources.length && picked.length < req.max; i++) {
      const { topic, q } = sources[(start + i) % sources.length];
      const popKey = popOffsetGroupOf(req.group);
      let offset = this.deps.offsets.query(popKey, topic, q) ??
        this.deps.offsets.query(req.group, topic, q) ??
        store.getMinOffsetInQueue(topic, q);
      const got = store.getMessage(topic, q, offset, {
        maxMsgNums: req.max - picked.length,
        maxBytes: this.deps.settings.popReadBytesMax,
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
    const unique = onePerMessage(picked);
    const popTime = this.deps.nowMs();
    // One CK per message, all written in this turn (one write, one fdatasync).
    const cks = unique.map((p) =>
      scheduleCheckpoint(
        this.deps,
        req.group,
        p.topic,
        p.q,
        p.offset,
        p.record.physicalOffset,
        popTime + req.invisibleMs,
      )
    );
    const ids = await Promise.all(cks);
    return unique.map((p, i) => {
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
    const popKey = `${popOffsetGroupOf(req.group)}@${req.clientId}`;
    const out: PopMessage[] = [];
    const start = this.#rotation++;
    for (let i = 0; i < req.readQueueNums && out.length < req.max; i++) {
      const q = (start + i) % req.readQueueNums;
      const min = this.deps.store.getMinOffsetInQueue(req.topic, q);
      const offset = Math.max(this.deps.offsets.query(popKey, req.topic, q) ?? min, min);
      const got = this.deps.store.getMessage(req.topic, q, offset, {
        maxMsgNums: req.max - out.length,
        maxBytes: this.deps.settings.popReadBytesMax,
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

  /** Acknowledges a received message: it will not come back. */
  async ack(group: string, handle: string): Promise<void> {
    const ck = checkpointOf(this.deps.timers, group, handle);
    const outcome = await settle(() => this.deps.timers.cancel(handle, REVIVE_TOPIC));
    if (outcome === "CANCELLED" && ck.ord) this.#orderly.done(ck);
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
    const ck = checkpointOf(this.deps.timers, group, handle);
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
    checkpointOf(this.deps.timers, group, handle);
    const until = this.deps.nowMs() + invisibleMs;
    const outcome = await settle(() => this.deps.timers.reschedule(handle, until, REVIVE_TOPIC));
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "RECEIPT_HANDLE_EXPIRED",
        `Cannot change ${handle}: its invisible time has passed and the message is being delivered again`,
      );
    }
    return until;
  }

  /** Dispatch's notice that CKs fired: bring their messages back, or bury them. */
  arriving(): void {
    this.#revive.arriving();
  }
}

/**
 * What a receive picked, with one copy of each message. After a
 * crash the pop offset goes back to its last persist, so a receive can read a message from
 * its queue and also the retry copy its checkpoint's revive put into %RETRY%{group}. One
 * answer carries each message once: the copy with the most reconsumeTimes, so the count
 * toward retryMaxTimes is kept. A dropped copy gets no checkpoint and its offset is passed:
 * the kept copy's checkpoint brings the message back if it is not acked.
 */
function onePerMessage<T extends { record: MessageRecord }>(picked: T[]): T[] {
  if (picked.length < 2) return picked;
  const best = new Map<string, T>(); // message id -> the copy kept
  for (const p of picked) {
    const id = p.record.properties.get(PROPERTY_UNIQ_KEY);
    if (id === undefined) continue;
    const seen = best.get(id);
    if (!seen || p.record.reconsumeTimes > seen.record.reconsumeTimes) best.set(id, p);
  }
  return picked.filter((p) => {
    const id = p.record.properties.get(PROPERTY_UNIQ_KEY);
    return id === undefined || best.get(id) === p;
  });
}
