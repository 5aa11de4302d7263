// What a record is given in CommitLog order (inside RocketMQ's put lock): the next queue
// offset of its queue and a store time that never goes back.
import type { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import { buildsConsumeQueue, type DispatchRequest } from "./dispatch_request.ts";

export class PutSequencer {
  // Next queue offset per topic, then per queue id: nested so a put looks it up without
  // building a "topic\0queueId" key string. A queue not here continues its ConsumeQueue.
  #topicQueueTable = new Map<string, Map<number, number>>();
  #lastStoreTimestamp = 0;

  constructor(private readonly consumeQueues: ConsumeQueueStore) {}

  get lastStoreTimestamp(): number {
    return this.#lastStoreTimestamp;
  }

  /** The store time of the next record: now, or the last one's if the clock went back. */
  nextStoreTimestamp(nowMs: number): number {
    const storeTimestamp = Math.max(nowMs, this.#lastStoreTimestamp);
    this.#lastStoreTimestamp = storeTimestamp;
    return storeTimestamp;
  }

  /** A record placed with its own store time (recovery, replicated appends). */
  noteStoreTimestamp(storeTimestamp: number): void {
    this.#lastStoreTimestamp = Math.max(this.#lastStoreTimestamp, storeTimestamp);
  }

  /** The next queue offsets of a topic's queues; a put reads, then sets, its queue's. */
  queuesOf(topic: string): Map<number, number> {
    let queues = this.#topicQueueTable.get(topic);
    if (queues === undefined) this.#topicQueueTable.set(topic, queues = new Map());
    return queues;
  }

  /** The queue offset a put to the queue gets (0 for a new queue). */
  queueOffsetOf(queues: Map<number, number>, topic: string, queueId: number): number {
    return queues.get(queueId) ?? (this.consumeQueues.find(topic, queueId)?.maxOffset ?? 0);
  }

  /** The queue offset the next record of a queue must carry; undefined for an empty queue. */
  expectedQueueOffset(topic: string, queueId: number): number | undefined {
    const next = this.#topicQueueTable.get(topic)?.get(queueId);
    if (next !== undefined) return next;
    const cq = this.consumeQueues.find(topic, queueId);
    return cq && cq.maxOffset > cq.minOffset ? cq.maxOffset : undefined;
  }

  /** Queue offsets continue from what the ConsumeQueues hold (after recovery, a cut). */
  clear(): void {
    this.#topicQueueTable.clear();
  }

  /**
   * Records after the written end were dropped (a write found the disk full): queue offsets
   * continue from the records still waiting for dispatch, then from the ConsumeQueues.
   */
  rewind(undispatched: readonly DispatchRequest[]): void {
    this.#topicQueueTable.clear();
    for (const req of undispatched) {
      if (buildsConsumeQueue(req.sysFlag)) {
        this.queuesOf(req.topic).set(req.queueId, req.consumeQueueOffset + 1);
      }
    }
  }

  deleteTopic(topic: string): void {
    this.#topicQueueTable.delete(topic);
  }
}
