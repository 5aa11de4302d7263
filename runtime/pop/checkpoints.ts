// The in-flight POP messages, in memory as RocketMQ 5 keeps them (PopBufferMergeService):
// a map by receipt handle, so an ack or a change of invisible time finds its entry in O(1)
// and appends one small record (acks of one turn share it); and a heap by deadline, which
// the revive loop takes due entries from. The durable records are the revive topic's
// (pop_log.ts); recover() replays them from the oldest CK with a live entry, whose queue
// offset is kept as the revive progress (a consumer offset, persisted with the others).
import { REVIVE_TOPIC } from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { CkSlot, InFlight } from "./checkpoint.ts";
import { DeadlineHeap } from "./deadline_heap.ts";
import { SettledHandles, type SettledHow } from "./settled_handles.ts";
import { popOffsetGroupOf } from "./group_topics.ts";
import type { PopDeps } from "./pop_types.ts";
import {
  appendChange,
  appendCheckpoint,
  appendSettled,
  type CkItem,
  parsePopRecord,
  type PopAdvance,
  type PopLogRecord,
} from "./pop_log.ts";

/** The revive progress: the queue offset of the oldest CK with a live entry. */
const REVIVE_GROUP = "%REVIVE%";
const HANDLE = /^[0-9A-F]{32}$/;
/** Handles one ack record carries at most (a record stays far below maxMessageSize). */
const ACK_RECORD_HANDLES = 4096;

/** What a receive hands out: a message read at (t, q, o), CommitLog offset c. */
export interface Picked {
  t: string;
  q: number;
  o: number;
  c: number;
}

export class PopCheckpoints {
  readonly #live = new Map<string, InFlight>();
  readonly #heap = new DeadlineHeap<InFlight>();
  /** The popSettledHandlesMax handles settled last, so a second ack gets its own error. */
  readonly #settled: SettledHandles;
  /** CK records in log order from the oldest with a live entry (from #head on). */
  #cks: CkSlot[] = [];
  #head = 0;
  #ackBatch: { handles: string[]; written: Promise<unknown> } | undefined;
  /** Told of each new deadline, so the revive loop can wake earlier. */
  onDeadline: (deadline: number) => void = () => {};

  constructor(private readonly deps: PopDeps) {
    this.#settled = new SettledHandles(deps.settings.popSettledHandlesMax);
  }

  get inFlight(): number {
    return this.#live.size;
  }

  /** Messages of `group` in flight from one of `topics` (drain status; a scan). */
  inFlightOf(group: string, topics: ReadonlySet<string>): number {
    let n = 0;
    for (const m of this.#live.values()) if (m.g === group && topics.has(m.t)) n++;
    return n;
  }

  /** The earliest deadline in flight. */
  nextDeadline(): number | undefined {
    return this.#heap.peek()?.deadline;
  }

  /** Writes one CK for a receive's batch and puts its messages in flight; their handles. */
  async add(
    group: string,
    deadline: number,
    picked: Picked[],
    advances: PopAdvance[],
    orderly = false,
  ): Promise<string[]> {
    const m: CkItem[] = picked.map((p) => [this.deps.newId(), p.t, p.q, p.o, p.c]);
    const slot: CkSlot = { offset: -1, live: m.length };
    this.#cks.push(slot);
    try {
      const put = await appendCheckpoint(this.deps, {
        g: group,
        d: deadline,
        ...(orderly ? { r: 1 as const } : {}),
        m,
        p: advances,
      });
      slot.offset = put.queueOffset;
    } catch (err) {
      slot.live = 0;
      this.#moveHead();
      throw err;
    }
    for (const item of m) this.#track(group, deadline, item, slot, orderly);
    this.onDeadline(deadline);
    return m.map((item) => item[0]);
  }

  /** The in-flight entry of `handle` if it is `group`'s; else the handle's typed error. */
  entry(group: string, handle: string): InFlight {
    const e = HANDLE.test(handle) ? this.#live.get(handle) : undefined;
    if (e !== undefined && e.g === group) return e;
    const settled = e === undefined ? this.#settled.get(handle) : undefined;
    if (settled?.group === group && settled.how === "acked") {
      throw new BrokerError(
        "RECEIPT_HANDLE_SETTLED",
        "Cannot settle this receipt handle again: it was already acknowledged",
      );
    }
    if (settled?.group === group) {
      throw new BrokerError(
        "RECEIPT_HANDLE_EXPIRED",
        `The invisible time of ${handle} has passed and the message is being delivered again`,
      );
    }
    throw new BrokerError(
      "RECEIPT_HANDLE_UNKNOWN",
      `Unknown receipt handle ${JSON.stringify(handle.slice(0, 64))} for group ${group}`,
    );
  }

  /** Settles `handle` for good once its ack record is written; the entry it was. */
  async ack(group: string, handle: string): Promise<InFlight> {
    const e = this.entry(group, handle);
    this.#forget(e, "acked");
    try {
      await this.#queueAck(handle);
    } catch (err) {
      this.#settled.delete(handle);
      this.#live.set(handle, e);
      this.#heap.push(e);
      throw err;
    }
    this.#release(e);
    return e;
  }

  /** Moves the deadline of `handle` (in memory at once, durable when this resolves). */
  async change(group: string, handle: string, deadline: number): Promise<void> {
    const e = this.entry(group, handle);
    const before = e.deadline;
    this.#heap.update(e, deadline);
    this.onDeadline(deadline);
    try {
      await appendChange(this.deps, handle, deadline);
    } catch (err) {
      if (this.#live.get(handle) === e) this.#heap.update(e, before);
      throw err;
    }
  }

  /** Takes the entries due at `now` (at most `max`): from now on their handles are expired. */
  takeDue(now: number, max: number): InFlight[] {
    const due = this.#heap.takeDue(now, max);
    for (const e of due) this.#forget(e, "revived");
    return due;
  }

  /** Their messages go back (or to the DLQ): one record, so recovery does not again. */
  recordRevived(entries: InFlight[]): Promise<unknown> {
    return entries.length === 0
      ? Promise.resolve()
      : appendSettled(this.deps, "revived", entries.map((e) => e.h));
  }

  /** Brought back and recorded: their CKs need no replay for them any more. */
  released(entries: InFlight[]): void {
    for (const e of entries) this.#release(e);
  }

  /** Taken but not brought back (a write failed): in flight again, due at `deadline`. */
  restore(entries: InFlight[], deadline: number): void {
    for (const e of entries) {
      this.#settled.delete(e.h);
      this.#live.set(e.h, e);
      e.deadline = deadline;
      this.#heap.push(e);
    }
    if (entries.length > 0) this.onDeadline(deadline);
  }

  /** Rebuilds the in-flight state from the revive topic, from the revive progress on. */
  recover(): void {
    const { store, settings } = this.deps;
    const min = store.getMinOffsetInQueue(REVIVE_TOPIC, 0);
    let from = Math.max(this.deps.offsets.query(REVIVE_GROUP, REVIVE_TOPIC, 0) ?? min, min);
    while (from < store.getMaxOffsetInQueue(REVIVE_TOPIC, 0)) {
      const got = store.getMessage(REVIVE_TOPIC, 0, from, {
        maxMsgNums: settings.popReviveBatchNums,
        maxBytes: settings.popReadBytesMax,
      });
      if (got.messages.length === 0 && got.nextBeginOffset <= from) break;
      for (const m of got.messages) {
        const record = parsePopRecord(m.record.body);
        if (record) this.#replay(m.queueOffset, record);
      }
      from = got.nextBeginOffset;
    }
    this.#moveHead(true);
  }

  #replay(queueOffset: number, record: PopLogRecord) {
    if (record.kind === "ck") {
      const { ck } = record;
      const slot: CkSlot = { offset: queueOffset, live: 0 };
      for (const item of ck.m) {
        if (this.#live.has(item[0]) || this.#settled.has(item[0])) continue;
        this.#track(ck.g, ck.d, item, slot, ck.r === 1);
        slot.live++;
      }
      this.#cks.push(slot);
      const popKey = popOffsetGroupOf(ck.g);
      for (const [t, q, next] of ck.p) {
        if ((this.deps.offsets.query(popKey, t, q) ?? -1) < next) {
          this.deps.offsets.commit(popKey, t, q, next);
        }
      }
    } else if (record.kind === "change") {
      const e = this.#live.get(record.handle);
      if (e) this.#heap.update(e, record.deadline);
    } else {
      for (const h of record.handles) {
        const e = this.#live.get(h);
        if (!e) continue;
        this.#forget(e, record.kind === "ack" ? "acked" : "revived");
        e.ck.live--;
      }
    }
  }

  #track(g: string, deadline: number, item: CkItem, ck: CkSlot, orderly: boolean) {
    const [h, t, q, o, c] = item;
    const e: InFlight = { h, g, t, q, o, c, ck, deadline, slot: -1 };
    if (orderly) e.ord = 1;
    this.#live.set(h, e);
    this.#heap.push(e);
  }

  #forget(e: InFlight, how: SettledHow) {
    this.#heap.remove(e);
    this.#live.delete(e.h);
    this.#settled.set(e.h, e.g, how);
  }

  /** Acks of this turn share one record (at most ACK_RECORD_HANDLES handles each). */
  #queueAck(handle: string): Promise<unknown> {
    let batch = this.#ackBatch;
    if (batch === undefined || batch.handles.length >= ACK_RECORD_HANDLES) {
      const handles: string[] = [];
      const written = Promise.resolve().then(() => {
        if (this.#ackBatch?.handles === handles) this.#ackBatch = undefined;
        return appendSettled(this.deps, "ack", handles);
      });
      batch = this.#ackBatch = { handles, written };
    }
    batch.handles.push(handle);
    return batch.written;
  }

  #release(e: InFlight) {
    if (--e.ck.live === 0 && e.ck === this.#cks[this.#head]) this.#moveHead();
  }

  /** Passes the CKs with nothing in flight and keeps the revive progress at the oldest. */
  #moveHead(always = false) {
    const before = this.#head;
    const cks = this.#cks;
    while (this.#head < cks.length && cks[this.#head].live === 0) this.#head++;
    if (this.#head === before && !always) return;
    if (this.#head > 1024 && this.#head * 2 > cks.length) {
      this.#cks = cks.slice(this.#head);
      this.#head = 0;
    }
    const oldest = this.#cks[this.#head];
    const progress = oldest === undefined
      ? this.deps.store.getMaxOffsetInQueue(REVIVE_TOPIC, 0)
      : oldest.offset;
    if (progress >= 0) this.deps.offsets.commit(REVIVE_GROUP, REVIVE_TOPIC, 0, progress);
  }
}
