// The per-topic route records in the coordination store (route_record.ts has the format):
// read one, change one with compare-and-set (re-read and retry when another writer came
// first), delete one. Every writer of a record goes through update(), so two functions
// processes that create or expand the same topic at once end with one record.
import type { KvPort } from "../platform/kv_port.ts";
import { BrokerError } from "../protocol/errors.ts";
import {
  decodeTopicRoute,
  encodeTopicRoute,
  topicRouteKey,
  type TopicRouteRecord,
} from "./route_record.ts";

/** CAS attempts before update() gives up (each loser re-reads the winner's record). */
export const RECORD_CAS_ATTEMPTS = 8;

export class TopicRecords {
  constructor(
    private readonly kv: KvPort,
    readonly cluster: string,
    private readonly nowMs: () => number,
  ) {}

  async get(topic: string): Promise<TopicRouteRecord | undefined> {
    return (await this.#read(topic)).record;
  }

  /**
   * Applies `change` to the current record (undefined: none yet) and writes the result
   * with compare-and-set; on a lost race it re-reads and applies `change` again. `change`
   * returns undefined to leave the record as it is. Answers the record as stored.
   */
  async update(
    topic: string,
    change: (current: TopicRouteRecord | undefined) => TopicRouteRecord | undefined,
  ): Promise<TopicRouteRecord | undefined> {
    for (let attempt = 0; attempt < RECORD_CAS_ATTEMPTS; attempt++) {
      const { record, versionstamp } = await this.#read(topic);
      const next = change(record);
      if (!next) return record;
      const written = { ...next, topic, updatedAtMs: this.nowMs() };
      const key = topicRouteKey(this.cluster, topic);
      const result = await this.kv.checkAndSet(key, versionstamp, encodeTopicRoute(written));
      if (result.ok) return written;
    }
    throw new BrokerError(
      "TOPIC_ROUTE_CONFLICT",
      `Cannot update the route of topic ${topic}: it changed under this writer ${RECORD_CAS_ATTEMPTS} times in a row; try again`,
    );
  }

  delete(topic: string): Promise<void> {
    return this.kv.delete(topicRouteKey(this.cluster, topic));
  }

  async #read(
    topic: string,
  ): Promise<{ record: TopicRouteRecord | undefined; versionstamp: string | null }> {
    const entry = await this.kv.get(topicRouteKey(this.cluster, topic));
    if (!entry) return { record: undefined, versionstamp: null };
    const record = decodeTopicRoute(entry.value);
    if (!record) {
      throw new BrokerError(
        "INTERNAL",
        `The route record of topic ${topic} in cluster ${this.cluster} is not readable`,
      );
    }
    return { record, versionstamp: entry.versionstamp };
  }
}

/** A new record: `groups` get slots 0, 1, … in the order given, all active. */
export function newRecord(topic: string, groups: string[], nowMs: number): TopicRouteRecord {
  return {
    topic,
    groups: groups.map((brokerGroup, slot) => ({ brokerGroup, slot, state: "active" })),
    nextSlot: groups.length,
    updatedAtMs: nowMs,
  };
}
