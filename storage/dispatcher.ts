// Dispatch (RocketMQ's reput): once records are visible (written under ASYNC_FLUSH, flushed
// under SYNC_FLUSH) their ConsumeQueue units and index entries are built, in CommitLog order,
// and the queues they reached are announced to the arrival listener (long polling wakes).
import type { CommitLog } from "./commit_log/commit_log.ts";
import type { ConsumeQueue } from "./consume_queue/consume_queue.ts";
import type { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import { buildsConsumeQueue, type DispatchRequest } from "./dispatch_request.ts";
import type { IndexService } from "./index/index_service.ts";
import type { ArrivalListener } from "./store_types.ts";
import type { WriteGate } from "./write_gate.ts";
import { isNoSpace } from "./file_port.ts";

export interface DispatchParts {
  commitLog: CommitLog;
  consumeQueues: ConsumeQueueStore;
  index: IndexService;
  messageIndexEnable: boolean;
}

export class Dispatcher {
  #undispatched: DispatchRequest[] = [];
  #dispatchedOffset = 0;
  #lastLogicsTimestamp = 0;
  #arrival: ArrivalListener = () => {};

  constructor(
    private readonly parts: DispatchParts,
    private readonly gate: WriteGate,
  ) {}

  /** ConsumeQueues and index hold every record below this. */
  get dispatchedOffset(): number {
    return this.#dispatchedOffset;
  }
  /** Store time of the last record given a ConsumeQueue unit. */
  get lastLogicsTimestamp(): number {
    return this.#lastLogicsTimestamp;
  }
  /** Records written but not yet dispatched. */
  get pending(): number {
    return this.#undispatched.length;
  }
  /** Those records, in CommitLog order. */
  get undispatched(): readonly DispatchRequest[] {
    return this.#undispatched;
  }

  onArrival(listener: ArrivalListener): void {
    this.#arrival = listener;
  }

  /** A record appended (by a put or a replicated append), dispatched once visible. */
  push(req: DispatchRequest): void {
    this.#undispatched.push(req);
  }

  /** Everything below `offset` is dispatched (after recovery, or an empty replica's start). */
  resetTo(offset: number): void {
    this.#dispatchedOffset = offset;
  }

  /** A truncation drops the records at and after `offset`. */
  dropFrom(offset: number): void {
    this.#undispatched = this.#undispatched.filter((r) => r.commitLogOffset < offset);
    this.#dispatchedOffset = Math.min(this.#dispatchedOffset, offset);
  }

  /**
   * A failed ConsumeQueue or index write leaves derived state behind the log: stop taking
   * writes rather than acknowledge what consumers cannot see. For want of space until the
   * dispatch catches up (no_space.ts: units already built are skipped when it runs again),
   * for any other cause for good (the restart's recovery rebuilds it). The gate logs it.
   */
  dispatchSafely(confirm: number): void {
    if (this.gate.writeFailure) return;
    try {
      this.dispatchUpTo(confirm);
    } catch (err) {
      if (isNoSpace(err)) this.gate.dispatchFoundNoSpace(err as Error);
      else this.gate.fail(err as Error);
    }
  }

  /** Builds ConsumeQueue and index entries for records now visible, then wakes waiters. */
  dispatchUpTo(confirm: number): void {
    const touched = new Set<ConsumeQueue>();
    let n = 0;
    while (n < this.#undispatched.length) {
      const req = this.#undispatched[n];
      if (req.commitLogOffset + req.msgSize > confirm) break;
      const cq = this.dispatchOne(req);
      if (cq) touched.add(cq);
      this.#dispatchedOffset = req.commitLogOffset + req.msgSize;
      n++;
    }
    if (n === 0) return;
    this.#undispatched = n === this.#undispatched.length ? [] : this.#undispatched.slice(n);
    for (const cq of touched) this.#arrival(cq.topic, cq.queueId, cq.maxOffset);
    // A BLANK at a segment end is not a record: dispatch has passed it when the log has.
    if (this.#undispatched.length === 0) {
      this.#dispatchedOffset = Math.max(
        this.#dispatchedOffset,
        Math.min(confirm, this.parts.commitLog.wroteOffset),
      );
    }
  }

  /** One record's ConsumeQueue unit and index entries (also recovery's rebuild). */
  dispatchOne(req: DispatchRequest): ConsumeQueue | undefined {
    let cq: ConsumeQueue | undefined;
    if (buildsConsumeQueue(req.sysFlag)) {
      cq = this.parts.consumeQueues.getOrCreate(req.topic, req.queueId);
      cq.put(req.consumeQueueOffset, req.commitLogOffset, req.msgSize, req.tagsCode);
      this.#lastLogicsTimestamp = req.storeTimestamp;
    }
    if (this.parts.messageIndexEnable) this.parts.index.put(req);
    return cq;
  }
}
