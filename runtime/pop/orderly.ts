// Ordered POP (orderly groups): one message per queue out at a time, retried in place until
// acked or buried. Holds which message of each queue is out and its failures so far.
import type { MessageRecord } from "../../storage/message/record.ts";
import type { PopMessage } from "../protocol/types.ts";
import { toWireMessage } from "../wire.ts";
import type { Checkpoint } from "./checkpoint.ts";
import type { PopCheckpoints } from "./checkpoints.ts";
import type { PopDeps, ReceiveRequest } from "./pop_types.ts";
import { popOffsetGroupOf } from "./group_topics.ts";
import { bury } from "./requeue.ts";

/** Ordered POP: the one message of a queue out with a consumer, and its failures so far. */
interface OrderlyInFlight {
  handle: string;
  offset: number;
  failures: number;
}

export class OrderlyPop {
  /** Orderly groups: queueKey() -> the message out; no other leaves that queue. */
  #orderly = new Map<string, OrderlyInFlight>();
  /** Orderly failures of the message at an offset of a queue, keyed by failureKey() (memory;
   * a restart resets). */
  #orderlyFailures = new Map<string, number>();

  constructor(private readonly deps: PopDeps, private readonly checkpoints: PopCheckpoints) {}

  /**
   * Ordered POP: at most one message per queue is out at a time, and the pop offset of a
   * queue moves only when that message is acked (or buried after retryMaxTimes failures),
   * so a failing message is retried in place and never overtaken by the next one.
   * `start`: the queue read first (PopService rotates it over receives).
   */
  async pop(req: ReceiveRequest, start: number): Promise<PopMessage[]> {
    const { store } = this.deps;
    const popKey = popOffsetGroupOf(req.group);
    const picked: { q: number; offset: number; record: MessageRecord; failures: number }[] = [];
    for (let i = 0; i < req.readQueueNums && picked.length < req.max; i++) {
      const q = (start + i) % req.readQueueNums;
      const key = queueKey(req.group, req.topic, q);
      if (this.#orderly.has(key)) continue; // its message is out
      let offset = this.deps.offsets.query(popKey, req.topic, q) ??
        this.deps.offsets.query(req.group, req.topic, q) ??
        store.getMinOffsetInQueue(req.topic, q);
      offset = Math.max(offset, store.getMinOffsetInQueue(req.topic, q));
      const got = store.getMessage(req.topic, q, offset, {
        maxMsgNums: 1,
        maxBytes: this.deps.settings.popReadBytesMax,
      });
      const m = got.messages[0];
      if (!m) continue;
      const failures = this.#orderlyFailures.get(failureKey(key, m.queueOffset)) ?? 0;
      // Reserved now, before the await below, so a concurrent receive skips this queue.
      this.#orderly.set(key, { handle: "", offset: m.queueOffset, failures });
      picked.push({ q, offset: m.queueOffset, record: m.record, failures });
    }
    if (picked.length === 0) return [];
    const popTime = this.deps.nowMs();
    const ids = await this.checkpoints.add(
      req.group,
      popTime + req.invisibleMs,
      picked.map((p) => ({ t: req.topic, q: p.q, o: p.offset, c: p.record.physicalOffset })),
      [],
      true,
    ).catch((err) => {
      for (const p of picked) this.#orderly.delete(queueKey(req.group, req.topic, p.q));
      throw err;
    });
    return picked.map((p, i) => {
      this.#orderly.set(queueKey(req.group, req.topic, p.q), {
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
  done(ck: Checkpoint) {
    const key = queueKey(ck.g, ck.t, ck.q);
    const out = this.#orderly.get(key);
    if (out && out.offset === ck.o) this.#orderly.delete(key);
    this.#orderlyFailures.delete(failureKey(key, ck.o));
    const popKey = popOffsetGroupOf(ck.g);
    const current = this.deps.offsets.query(popKey, ck.t, ck.q) ?? 0;
    if (ck.o + 1 > current) this.deps.offsets.commit(popKey, ck.t, ck.q, ck.o + 1);
  }

  /** An ordered message was not acked in time: it is handed out again, in place. */
  failed(ck: Checkpoint): Promise<unknown> {
    const key = queueKey(ck.g, ck.t, ck.q);
    const popKey = popOffsetGroupOf(ck.g);
    if ((this.deps.offsets.query(popKey, ck.t, ck.q) ?? 0) > ck.o) return Promise.resolve(); // settled before
    const out = this.#orderly.get(key);
    if (out && out.offset === ck.o) this.#orderly.delete(key);
    const failures = (this.#orderlyFailures.get(failureKey(key, ck.o)) ?? 0) + 1;
    if (
      failures <=
        (this.deps.groupOf(ck.g)?.retryMaxTimes ?? this.deps.settings.retryMaxTimesDefault)
    ) {
      this.#orderlyFailures.set(failureKey(key, ck.o), failures);
      this.deps.holds.arriving(ck.t, ck.q, Number.MAX_SAFE_INTEGER); // wake receivers: it is back
      return Promise.resolve();
    }
    // Past the limit it is buried, so the queue can move on.
    const original = this.deps.store.lookMessageByOffset(ck.c);
    this.done(ck);
    if (!original) return Promise.resolve();
    return bury(this.deps, ck.g, original, original.reconsumeTimes + failures);
  }
}

/**
 * The key of one queue of a group. Names may hold `|` (NAME_PATTERN), so "a|b" + "c" and
 * "a" + "b|c" would share `${group}|${topic}`; NUL is in no name, so these keys cannot
 * collide.
 */
function queueKey(group: string, topic: string, queueId: number): string {
  return `${group}\u0000${topic}\u0000${queueId}`;
}

function failureKey(queueKey: string, offset: number): string {
  return `${queueKey}\u0000${offset}`;
}
