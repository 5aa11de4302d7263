// Consumer offsets as the API shows them: commit, query with lag, reset by time. The
// offsets themselves live in ConsumerOffsetStore (memory, persisted on an interval).
//
// A group has one position per queue. Pull consumers commit it under the group's name; POP
// keeps its pop offset under %POP%{group} (popOffsetGroupOf) and reads it first. So where
// a queue has a pop offset, that is the group's position: shown by GET, moved by commit
// and reset; elsewhere the committed offset is.
import type { MessageStore } from "../../storage/message_store.ts";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { GroupOffsets, QueueOffsetInfo } from "../protocol/types.ts";
import { popOffsetGroupOf } from "../pop/group_topics.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { TopicRegistry } from "./topic_registry.ts";

export interface OffsetsDeps {
  store: MessageStore;
  offsets: ConsumerOffsetStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
}

export class ConsumerOffsets {
  constructor(private readonly d: OffsetsDeps) {}

  async commitOffset(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<QueueOffsetInfo> {
    await this.d.groups.existing(group);
    this.d.topics.readableQueue(topic, queueId);
    const max = this.d.store.getMaxOffsetInQueue(topic, queueId);
    const min = this.d.store.getMinOffsetInQueue(topic, queueId);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > max) {
      throw new BrokerError(
        "OFFSET_OUT_OF_RANGE",
        `Cannot commit offset ${offset} for ${topic}:${queueId}: valid offsets are 0 to ${max}`,
        { minOffset: min, maxOffset: max },
      );
    }
    this.#move(group, topic, queueId, offset);
    return this.info(group, topic, queueId);
  }

  async getOffset(group: string, topic: string, queueId: number): Promise<QueueOffsetInfo> {
    await this.d.groups.existing(group);
    this.d.topics.readableQueue(topic, queueId);
    return this.info(group, topic, queueId);
  }

  async getOffsets(group: string, topic: string): Promise<GroupOffsets> {
    await this.d.groups.existing(group);
    const config = this.d.topics.readable(topic, 0);
    const queues = [...Array(config.readQueueNums).keys()].map((q) => this.info(group, topic, q));
    return { group, topic, queues, totalLag: queues.reduce((s, q) => s + q.lag, 0) };
  }

  async resetOffsetsByTime(group: string, topic: string, timestamp: number): Promise<GroupOffsets> {
    await this.d.groups.existing(group);
    const config = this.d.topics.readable(topic, 0);
    for (let q = 0; q < config.readQueueNums; q++) {
      this.#move(group, topic, q, this.d.store.getOffsetInQueueByTime(topic, q, timestamp));
    }
    return this.getOffsets(group, topic);
  }

  /** Sets the group's position in a queue: the committed offset, and the pop offset when
   * POP keeps one there (else POP would go on from where it was). */
  #move(group: string, topic: string, queueId: number, offset: number): void {
    this.d.offsets.commit(group, topic, queueId, offset);
    const pop = popOffsetGroupOf(group);
    if (this.d.offsets.query(pop, topic, queueId) !== undefined) {
      this.d.offsets.commit(pop, topic, queueId, offset);
    }
  }

  /** One queue's position (the pop offset where POP keeps one, else the committed offset),
   * range and lag (0 for a queue never consumed). */
  info(group: string, topic: string, queueId: number): QueueOffsetInfo {
    const min = this.d.store.getMinOffsetInQueue(topic, queueId);
    const max = this.d.store.getMaxOffsetInQueue(topic, queueId);
    const stored = this.d.offsets.query(popOffsetGroupOf(group), topic, queueId) ??
      this.d.offsets.query(group, topic, queueId);
    const from = stored === undefined ? max : Math.max(stored, min);
    return {
      queueId,
      offset: stored ?? -1,
      minOffset: min,
      maxOffset: max,
      lag: stored === undefined ? 0 : Math.max(0, max - from),
    };
  }
}
