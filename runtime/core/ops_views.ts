// The operations views (OpsApi): every group, a topic's statistics, a group's progress
// across the topics it consumes (mqadmin consumerProgress), and this broker as a cluster
// of one. Read-only: offsets and counters as the broker holds them now.
import type { MessageStore } from "../../storage/message_store.ts";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import type { OpsApi } from "../protocol/core_api.ts";
import type {
  ClusterView,
  GroupProgress,
  GroupTopicProgress,
  QueueStats,
  TopicStats,
} from "../protocol/ops_types.ts";
import type { GroupView } from "../protocol/types.ts";
import { popOffsetGroupOf } from "../pop/group_topics.ts";
import type { DeadLetters } from "./dlq.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { ConsumerOffsets } from "./offsets.ts";
import type { TopicRegistry } from "./topic_registry.ts";
import type { TrafficCounters } from "./traffic.ts";

export interface OpsViewsDeps {
  store: MessageStore;
  offsets: ConsumerOffsetStore;
  consumerOffsets: ConsumerOffsets;
  topics: TopicRegistry;
  groups: GroupRegistry;
  dlq: DeadLetters;
  traffic: TrafficCounters;
  brokerName: string;
}

export class OpsViews implements OpsApi {
  constructor(private readonly d: OpsViewsDeps) {}

  listGroups(): Promise<GroupView[]> {
    return Promise.resolve(this.d.groups.list());
  }

  async topicStats(topic: string): Promise<TopicStats> {
    const { store, traffic } = this.d;
    const config = await this.d.topics.get(topic);
    const queues: QueueStats[] = [];
    for (let q = 0; q < Math.max(config.readQueueNums, config.writeQueueNums); q++) {
      const minOffset = store.getMinOffsetInQueue(topic, q);
      const maxOffset = store.getMaxOffsetInQueue(topic, q);
      queues.push({ queueId: q, minOffset, maxOffset, lastStoreTimestamp: this.#last(topic, q) });
    }
    return {
      topic,
      queues,
      messages: queues.reduce((s, q) => s + q.maxOffset - q.minOffset, 0),
      messagesWritten: queues.reduce((s, q) => s + q.maxOffset, 0),
      bytesProducedSinceStart: traffic.get(topic).producedBytes,
      produceRatePerSec: Math.round(traffic.produceRate(topic) * 100) / 100,
    };
  }

  async groupProgress(group: string): Promise<GroupProgress> {
    const view = await this.d.groups.get(group);
    const topics: GroupTopicProgress[] = [];
    for (const topic of this.d.topics.names().sort()) {
      if (!this.#consumes(group, topic)) continue;
      const { queues, totalLag } = await this.d.consumerOffsets.getOffsets(group, topic);
      topics.push({ topic, queues, totalLag });
    }
    return {
      group: view,
      topics,
      totalLag: topics.reduce((s, t) => s + t.totalLag, 0),
      dlqMessages: this.d.dlq.size(group),
    };
  }

  clusterView(): Promise<ClusterView> {
    return Promise.resolve({
      mode: "single",
      nodes: [{
        brokerGroup: this.d.brokerName,
        brokerId: 0,
        role: "master",
        epoch: 0,
        maxOffset: this.d.store.maxPhysicalOffset,
      }],
    });
  }

  /** Whether the group holds a position (committed or POP) in any queue of the topic. */
  #consumes(group: string, topic: string): boolean {
    return this.d.offsets.queryAll(group, topic).size > 0 ||
      this.d.offsets.queryAll(popOffsetGroupOf(group), topic).size > 0;
  }

  /** Store time of the newest message of a queue (0 when empty or unreadable). */
  #last(topic: string, queueId: number): number {
    const max = this.d.store.getMaxOffsetInQueue(topic, queueId);
    if (max <= this.d.store.getMinOffsetInQueue(topic, queueId)) return 0;
    try {
      const got = this.d.store.getMessage(topic, queueId, max - 1, {
        maxMsgNums: 1,
        maxBytes: 1 << 30,
      });
      return got.messages[0]?.record.storeTimestamp ?? 0;
    } catch {
      return 0;
    }
  }
}
