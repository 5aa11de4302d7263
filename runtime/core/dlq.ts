// Dead letters (%DLQ%{group}): list from the purge cursor, redrive to the original topic
// through the producer, purge by moving the cursor (letters age out of the CommitLog).
import type { MessageStore } from "../../storage/message_store.ts";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import {
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_UNIQ_KEY,
} from "../../storage/message/message_const.ts";
import type { PullResult } from "../protocol/types.ts";
import { dlqTopicOf } from "../pop/group_topics.ts";
import { toWireMessage } from "../wire.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { Producer } from "./producer.ts";
import type { TopicRegistry } from "./topic_registry.ts";
import type { BodyText } from "../platform/platform.ts";

/** Offsets-store group that keeps each DLQ's purge/redrive cursor. */
const DLQ_CURSOR_PREFIX = "%DLQCURSOR%";

export interface DlqSettings {
  pullMsgNumsDefault: number;
  pullMsgNumsMax: number;
  pullBytesMax: number;
  /** Messages and bytes a redrive reads from the DLQ per page. */
  dlqRedriveBatchNums: number;
  dlqRedriveBatchBytes: number;
}

export interface DlqDeps {
  store: MessageStore;
  offsets: ConsumerOffsetStore;
  producer: Producer;
  topics: TopicRegistry;
  groups: GroupRegistry;
  settings: DlqSettings;
  bodyText: BodyText;
}

export class DeadLetters {
  constructor(private readonly d: DlqDeps) {}

  /** Messages in %DLQ%{group} from the purge cursor (or `offset`), original topic shown. */
  async listDlq(
    group: string,
    options: { offset?: number; max?: number } = {},
  ): Promise<PullResult> {
    await this.d.groups.existing(group);
    const { store, settings } = this.d;
    const dlq = dlqTopicOf(group);
    const cursor = this.#cursor(group);
    const max = Math.min(options.max ?? settings.pullMsgNumsDefault, settings.pullMsgNumsMax);
    const from = Math.max(options.offset ?? cursor, cursor, store.getMinOffsetInQueue(dlq, 0));
    const got = store.getMessage(dlq, 0, from, {
      maxMsgNums: max,
      maxBytes: settings.pullBytesMax,
    });
    const messages = got.messages.map((m) => {
      const wire = toWireMessage(m.record, m.queueOffset, this.d.bodyText);
      return { ...wire, topic: m.record.properties.get(PROPERTY_DLQ_ORIGIN_TOPIC) ?? wire.topic };
    });
    return {
      status: messages.length ? "FOUND" : "NO_NEW_MESSAGE",
      messages,
      nextOffset: Math.max(from, got.nextBeginOffset),
      minOffset: Math.max(cursor, got.minOffset),
      maxOffset: store.getMaxOffsetInQueue(dlq, 0),
    };
  }

  /**
   * Puts dead letters back on their original topic with reconsumeTimes 0 (same id, body and
   * properties): the listed ones, or all from the cursor, which then moves past them.
   */
  async redriveDlq(group: string, messageIds?: string[]): Promise<{ redriven: number }> {
    await this.d.groups.existing(group);
    const { store, settings } = this.d;
    const dlq = dlqTopicOf(group);
    const end = store.getMaxOffsetInQueue(dlq, 0);
    const wanted = messageIds ? new Set(messageIds) : undefined;
    const puts: Promise<unknown>[] = [];
    for (
      let offset = Math.max(this.#cursor(group), store.getMinOffsetInQueue(dlq, 0));
      offset < end;
    ) {
      const got = store.getMessage(dlq, 0, offset, {
        maxMsgNums: settings.dlqRedriveBatchNums,
        maxBytes: settings.dlqRedriveBatchBytes,
      });
      if (got.messages.length === 0) break;
      for (const { record } of got.messages) {
        const props = new Map(record.properties);
        if (wanted && !wanted.has(props.get(PROPERTY_UNIQ_KEY) ?? "")) continue;
        const origin = props.get(PROPERTY_DLQ_ORIGIN_TOPIC) ?? props.get(PROPERTY_RETRY_TOPIC);
        const topic = origin ? this.d.topics.find(origin) : undefined;
        if (!topic) continue; // the original topic is gone: the letter stays
        for (const p of [PROPERTY_DLQ_ORIGIN_TOPIC, PROPERTY_RETRY_TOPIC]) props.delete(p);
        puts.push(this.d.producer.putStored(topic, {
          body: record.body,
          flag: record.flag,
          properties: props,
          bornTimestamp: record.bornTimestamp,
          bornHost: record.bornHost,
          reconsumeTimes: 0,
        }));
      }
      offset = got.nextBeginOffset;
    }
    await Promise.all(puts);
    if (!wanted) this.d.offsets.commit(DLQ_CURSOR_PREFIX + group, dlq, 0, end);
    return { redriven: puts.length };
  }

  /** Forgets every dead letter of the group (they age out of the CommitLog). */
  async purgeDlq(group: string): Promise<{ purged: number }> {
    await this.d.groups.existing(group);
    const { store } = this.d;
    const dlq = dlqTopicOf(group);
    const cursor = this.#cursor(group);
    const end = store.getMaxOffsetInQueue(dlq, 0);
    this.d.offsets.commit(DLQ_CURSOR_PREFIX + group, dlq, 0, end);
    return { purged: Math.max(0, end - Math.max(cursor, store.getMinOffsetInQueue(dlq, 0))) };
  }

  /** Dead letters the group holds: from the cursor to the end of %DLQ%{group}. */
  size(group: string): number {
    const { store } = this.d;
    const dlq = dlqTopicOf(group);
    const end = store.getMaxOffsetInQueue(dlq, 0);
    return Math.max(0, end - Math.max(this.#cursor(group), store.getMinOffsetInQueue(dlq, 0)));
  }

  #cursor(group: string): number {
    return this.d.offsets.query(DLQ_CURSOR_PREFIX + group, dlqTopicOf(group), 0) ?? 0;
  }
}
