// POP consumption for stateless consumers (reference/rocketmq.md §19): receive a batch
// with an invisible time, then ack, nack or change the invisible time by receipt handle.
//
// As RocketMQ 5 keeps it: a receive writes one checkpoint (CK) record for its batch to the
// revive topic, naming each message handed out and the pop offsets it moved; the messages
// in flight live in memory (pop/checkpoints.ts), found by receipt handle in O(1) and
// ordered by deadline. An ack or a change of invisible time appends one small record (the
// acks of one turn share one) and never reads the log back. When a deadline passes, the
// revive loop (pop/revive.ts) puts the message again into %RETRY%{group} with
// reconsumeTimes + 1, or past the group's retryMaxTimes into %DLQ%{group}, keeping its id,
// topic and properties. Receive reads the topic's queues and the group's retry queue from
// per-(group, queue) pop offsets, kept with the consumer offsets.
//
// Recovery (start()) replays the revive topic from the oldest CK with a message in flight:
// CKs put their messages in flight again and move the pop offsets up to theirs, acks and
// "revived" records settle them. So after a crash an acked message does not come back and
// an unacked one comes back once its invisible time has passed (at-least-once: a message
// read by a receive whose CK was not written yet is read again).
//
// This file receives and settles; the parts are in runtime/pop/: in-flight state
// (checkpoints.ts, deadline_heap.ts), the records (pop_log.ts), ordered POP (orderly.ts),
// the revive loop (revive.ts) and retry/DLQ routing (requeue.ts).
import { PROPERTY_RETRY_TOPIC, PROPERTY_UNIQ_KEY } from "../storage/message/message_const.ts";
import type { MessageRecord } from "../storage/message/record.ts";
import { BrokerError } from "./protocol/errors.ts";
import { type PopMessage, signalOf } from "./protocol/types.ts";
import { toWireMessage } from "./wire.ts";
import type { Checkpoint } from "./pop/checkpoint.ts";
import { PopCheckpoints } from "./pop/checkpoints.ts";
import type { PopAdvance } from "./pop/pop_log.ts";
import { popOffsetGroupOf, retryTopicOf } from "./pop/group_topics.ts";
import { OrderlyPop } from "./pop/orderly.ts";
import type { PopDeps, ReceiveRequest } from "./pop/pop_types.ts";
import { reviveLegacy, ReviveLoop } from "./pop/revive.ts";

export type { PopDeps, ReceiveRequest } from "./pop/pop_types.ts";

/** Why a receive's own holds are released: a constant, so abort() builds no DOMException. */
const RELEASED = "released";

export class PopService {
  #rotation = 0;
  /** Ordered POP's queues in flight (orderly groups). */
  readonly #orderly: OrderlyPop;
  readonly #revive: ReviveLoop;
  readonly #checkpoints: PopCheckpoints;

  constructor(private readonly deps: PopDeps) {
    this.#checkpoints = new PopCheckpoints(deps);
    this.#orderly = new OrderlyPop(deps, this.#checkpoints);
    this.#revive = new ReviveLoop(deps, this.#orderly, this.#checkpoints);
  }

  /** Rebuilds the messages in flight from the revive topic, then starts the revive loop. */
  start(): void {
    this.#checkpoints.recover();
    this.#revive.start();
  }

  async close(): Promise<void> {
    await this.#revive.close();
  }

  /** A timer-wheel CK (written before the upgrade to in-memory checkpoints) has fired. */
  reviveLegacy(body: Uint8Array): Promise<unknown> {
    return reviveLegacy(this.deps, body);
  }

  /** Messages received and not settled yet. */
  get inFlight(): number {
    return this.#checkpoints.inFlight;
  }

  /** Messages of `group` received from one of `topics` and not settled yet. */
  inFlightOf(group: string, topics: ReadonlySet<string>): number {
    return this.#checkpoints.inFlightOf(group, topics);
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
    // The in-flight bound: a receive takes only the room left (receives running at once
    // can each take it, so the bound is exceeded by at most one batch per such receive).
    const room = this.deps.settings.popInflightMax - this.#checkpoints.inFlight;
    if (room <= 0) return [];
    if (room < req.max) req = { ...req, max: room };
    if (group?.orderly) return this.#orderly.pop(req, this.#rotation++);
    const { store } = this.deps;
    const sources = [...Array(req.readQueueNums).keys()].map((q) => ({ topic: req.topic, q }));
    sources.push({ topic: retry, q: 0 });
    const start = this.#rotation++ % sources.length;
    const picked: { topic: string; q: number; offset: number; record: MessageRecord }[] = [];
    const advances: PopAdvance[] = [];
    const popKey = popOffsetGroupOf(req.group);
    for (let i = 0; i < sources.length && picked.length < req.max; i++) {
      const { topic, q } = sources[(start + i) % sources.length];
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
        const next = Math.max(offset, got.nextBeginOffset);
        this.deps.offsets.commit(popKey, topic, q, next);
        if (got.messages.length > 0) advances.push([topic, q, next]);
      }
    }
    if (picked.length === 0) return [];
    const unique = onePerMessage(picked);
    const popTime = this.deps.nowMs();
    // One CK for the whole batch.
    const ids = await this.#checkpoints.add(
      req.group,
      popTime + req.invisibleMs,
      unique.map((p) => ({ t: p.topic, q: p.q, o: p.offset, c: p.record.physicalOffset })),
      advances,
    );
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

  /** Where the in-flight message of `handle` was read; else the handle's typed error. */
  checkpointOf(group: string, handle: string): Checkpoint {
    return this.#checkpoints.entry(group, handle);
  }

  /** Acknowledges a received message: it will not come back. */
  async ack(group: string, handle: string): Promise<void> {
    const e = await this.#checkpoints.ack(group, handle);
    if (e.ord) this.#orderly.done(e);
  }

  /**
   * Gives the message back: it returns after `delayMs`, or by default after the group's
   * retry ladder — its retryBackoffMs list, else RocketMQ's delay level 3 + reconsumeTimes
   * (10 s, 30 s, 1 min, … 2 h) — counting a reconsume.
   */
  async nack(group: string, handle: string, delayMs: number | undefined): Promise<void> {
    const ck = this.#checkpoints.entry(group, handle);
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
    const until = this.deps.nowMs() + invisibleMs;
    await this.#checkpoints.change(group, handle, until);
    return until;
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
