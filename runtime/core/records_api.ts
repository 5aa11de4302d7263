// What the remoting front end asks of the core beyond the HTTP calls (RecordApi in
// core_api.ts): records as stored, queue ranges without a group, and the consumer's
// send-back (RocketMQ's SendMessageProcessor.consumerSendMsgBack, reference/rocketmq.md §9).
import type { MessageStore } from "../../storage/message_store.ts";
import {
  PROPERTY_DELAY,
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_ORIGIN_MESSAGE_ID,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_UNIQ_KEY,
  SCHEDULE_TOPIC,
} from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkReadableTopic } from "../protocol/names.ts";
import type { FindQuery, SendBackRequest, SendBackResult } from "../protocol/types.ts";
import { dlqTopicOf, retryTopicOf } from "../pop/group_topics.ts";
import { rethrowStoreError } from "./errors.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { StoreHost } from "./store_host.ts";
import type { TopicRegistry } from "./topic_registry.ts";

export interface RecordsDeps {
  store: MessageStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  storeHost: StoreHost;
  /** Most records one find answers (maxMsgsNumBatch). */
  queryMessageNumsMax: number;
}

/** Retry copies wait at level 3 + reconsumeTimes (10 s for the first retry). */
const RETRY_LEVEL_BASE = 3;

export class RecordsApi {
  constructor(private readonly d: RecordsDeps) {}

  queueRange(topic: string, queueId: number): Promise<{ minOffset: number; maxOffset: number }> {
    try {
      this.#readable(topic, queueId);
    } catch (err) {
      return Promise.reject(err);
    }
    const { store } = this.d;
    return Promise.resolve({
      minOffset: store.getMinOffsetInQueue(topic, queueId),
      maxOffset: store.getMaxOffsetInQueue(topic, queueId),
    });
  }

  offsetByTime(topic: string, queueId: number, timestamp: number): Promise<number> {
    try {
      this.#readable(topic, queueId);
    } catch (err) {
      return Promise.reject(err);
    }
    return Promise.resolve(this.d.store.getOffsetInQueueByTime(topic, queueId, timestamp));
  }

  recordAt(commitLogOffset: number): Promise<Uint8Array | undefined> {
    if (!Number.isSafeInteger(commitLogOffset) || commitLogOffset < 0) {
      return Promise.resolve(undefined);
    }
    return Promise.resolve(this.d.store.lookRecord(commitLogOffset)?.bytes);
  }

  findRecords(topic: string, query: FindQuery): Promise<Uint8Array[]> {
    checkReadableTopic(topic);
    const maxNum = Math.min(query.maxNum ?? 32, this.d.queryMessageNumsMax);
    const records = this.d.store.queryMessage(topic, query.key ?? "", {
      maxNum,
      beginTimestamp: query.beginTimestamp ?? 0,
      endTimestamp: query.endTimestamp ?? Number.MAX_SAFE_INTEGER,
    });
    const out: Uint8Array[] = [];
    for (const r of records) {
      const found = this.d.store.lookRecord(r.physicalOffset);
      if (found) out.push(found.bytes);
    }
    return Promise.resolve(out);
  }

  async sendBack(group: string, request: SendBackRequest): Promise<SendBackResult> {
    const view = await this.d.groups.get(group);
    const found = Number.isSafeInteger(request.commitLogOffset)
      ? this.d.store.lookRecord(request.commitLogOffset)
      : undefined;
    if (!found) {
      throw new BrokerError(
        "MESSAGE_NOT_FOUND",
        `Cannot send back the message at CommitLog offset ${request.commitLogOffset}: there is none`,
      );
    }
    const original = found.record;
    const asked = request.maxReconsumeTimes;
    const max = asked !== undefined && asked >= 0 ? asked : view.retryMaxTimes;
    const times = original.reconsumeTimes;
    const dead = request.delayLevel < 0 || times >= max;
    const properties = new Map(original.properties);
    for (const k of [PROPERTY_REAL_TOPIC, PROPERTY_REAL_QUEUE_ID, PROPERTY_DELAY]) {
      properties.delete(k);
    }
    if (!properties.has(PROPERTY_RETRY_TOPIC)) properties.set(PROPERTY_RETRY_TOPIC, original.topic);
    if (!properties.has(PROPERTY_ORIGIN_MESSAGE_ID)) {
      const origin = request.originMessageId ?? properties.get(PROPERTY_UNIQ_KEY);
      if (origin) properties.set(PROPERTY_ORIGIN_MESSAGE_ID, origin);
    }
    let place: { topic: string; queueId: number };
    const target = dead ? dlqTopicOf(group) : retryTopicOf(group);
    if (dead) {
      properties.set(PROPERTY_DLQ_ORIGIN_TOPIC, properties.get(PROPERTY_RETRY_TOPIC)!);
      place = { topic: target, queueId: 0 };
    } else {
      const levels = this.d.store.delayLevelsMs.length;
      const level = Math.min(
        request.delayLevel > 0 ? request.delayLevel : RETRY_LEVEL_BASE + times,
        levels,
      );
      properties.set(PROPERTY_REAL_TOPIC, target);
      properties.set(PROPERTY_REAL_QUEUE_ID, "0");
      properties.set(PROPERTY_DELAY, String(level));
      place = { topic: SCHEDULE_TOPIC, queueId: level - 1 };
    }
    await this.d.store.putMessage({
      ...place,
      body: original.body,
      flag: original.flag,
      properties,
      bornTimestamp: original.bornTimestamp,
      bornHost: original.bornHost,
      storeHost: this.d.storeHost,
      reconsumeTimes: times + 1,
    }).catch(rethrowStoreError);
    return { topic: target, reconsumeTimes: times + 1 };
  }

  #readable(topic: string, queueId: number): void {
    this.d.topics.readableQueue(topic, queueId);
  }
}
