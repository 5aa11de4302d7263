// The topics this broker serves: loaded from the metadata store at open, kept in memory
// so the produce path never awaits, written through on every change (TopicConfigManager).
import {
  MetadataError,
  type MetadataStore,
  PERM_READ,
  PERM_WRITE,
  type TopicConfig as StoredTopic,
} from "../../storage/metadata/metadata_store.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkReadableTopic, checkUserTopic } from "../protocol/names.ts";
import type { TopicConfig, TopicUpsert } from "../protocol/types.ts";

export interface TopicSettings {
  defaultTopicQueueNums: number;
  topicQueueNumsMax: number;
  autoCreateTopicEnable: boolean;
  /** Client topics only: system topics (%RETRY%, %DLQ%, the broker's own) are never
   * registered here, so they neither count nor are refused. */
  topicsMax: number;
}

export class TopicRegistry {
  readonly #topics = new Map<string, TopicConfig>();
  readonly #metadata: MetadataStore;
  readonly #settings: TopicSettings;
  readonly #deleted: Array<(topic: string) => void> = [];
  /** Names being created: counted against topicsMax while their write is in flight, so
   * concurrent auto-creates cannot pass the limit together. */
  readonly #creating = new Set<string>();
  /** Loaded names that fail checkUserTopic (metadata written under other rules): writable()
   * checks these; every other registered name passed it in upsert(). */
  readonly #unchecked = new Set<string>();

  private constructor(metadata: MetadataStore, settings: TopicSettings) {
    this.#metadata = metadata;
    this.#settings = settings;
  }

  static async load(metadata: MetadataStore, settings: TopicSettings): Promise<TopicRegistry> {
    const registry = new TopicRegistry(metadata, settings);
    for (const t of await metadata.listTopics()) {
      registry.#topics.set(t.topicName, toTopic(t));
      try {
        checkUserTopic(t.topicName);
      } catch {
        registry.#unchecked.add(t.topicName);
      }
    }
    return registry;
  }

  /** Called after a topic is deleted, to drop what other services keep for it. */
  onDeleted(handler: (topic: string) => void): void {
    this.#deleted.push(handler);
  }

  get size(): number {
    return this.#topics.size;
  }
  names(): string[] {
    return [...this.#topics.keys()];
  }
  configs(): TopicConfig[] {
    return [...this.#topics.values()];
  }
  find(name: string): TopicConfig | undefined {
    return this.#topics.get(name);
  }

  async upsert(name: string, update: TopicUpsert): Promise<TopicConfig> {
    checkUserTopic(name);
    const current = this.#topics.get(name);
    const { defaultTopicQueueNums: queues, topicQueueNumsMax: max } = this.#settings;
    const next = {
      topicName: name,
      readQueueNums: update.readQueueNums ?? current?.readQueueNums ?? queues,
      writeQueueNums: update.writeQueueNums ?? current?.writeQueueNums ?? queues,
      perm: update.perm ?? current?.perm ?? (PERM_READ | PERM_WRITE),
      order: update.order ?? current?.order ?? false,
    };
    for (const k of ["readQueueNums", "writeQueueNums"] as const) {
      const v = next[k];
      if (!Number.isInteger(v) || v < 1 || v > max) {
        throw new BrokerError(
          "INVALID_PARAMETER",
          `Cannot set ${k} to ${v}: it must be 1-${max} (topicQueueNumsMax)`,
        );
      }
    }
    const creating = !current && !this.#creating.has(name);
    if (creating) this.#checkRoom(name);
    if (creating) this.#creating.add(name);
    try {
      const stored = toTopic(await this.#metadata.upsertTopic(next));
      this.#topics.set(name, stored);
      return stored;
    } catch (err) {
      if (err instanceof MetadataError) {
        throw new BrokerError("INVALID_PARAMETER", err.message, {}, { cause: err });
      }
      throw err;
    } finally {
      if (creating) this.#creating.delete(name);
    }
  }

  #checkRoom(name: string): void {
    const held = this.#topics.size + this.#creating.size;
    if (held >= this.#settings.topicsMax) {
      throw new BrokerError(
        "TOO_MANY_TOPICS",
        `Cannot create topic ${name}: the broker holds ${held} topics, topicsMax is ${this.#settings.topicsMax}`,
      );
    }
  }

  get(name: string): Promise<TopicConfig> {
    checkReadableTopic(name);
    const topic = this.#topics.get(name);
    if (!topic) return Promise.reject(new BrokerError("TOPIC_NOT_FOUND", `No topic ${name}`));
    return Promise.resolve(topic);
  }

  list(): Promise<TopicConfig[]> {
    return Promise.resolve(this.configs().sort((a, b) => a.name.localeCompare(b.name)));
  }

  async delete(name: string): Promise<void> {
    await this.get(name);
    await this.#metadata.deleteTopic(name);
    this.#topics.delete(name);
    for (const handler of this.#deleted) handler(name);
  }

  /** The topic when it exists (no await on the produce path), else a promise of its
   * creation when autoCreateTopicEnable is on. */
  writable(name: string): TopicConfig | Promise<TopicConfig> {
    // A registered name passed checkUserTopic when it was created: the name checks (a regular
    // expression, the system names) run only for names not found (bench/README.md, Round 5).
    const topic = this.#topics.get(name);
    if (topic && (this.#unchecked.size === 0 || !this.#unchecked.has(name))) {
      return checkWritePerm(topic);
    }
    checkUserTopic(name);
    if (topic) return checkWritePerm(topic);
    if (!this.#settings.autoCreateTopicEnable) {
      throw new BrokerError(
        "TOPIC_NOT_FOUND",
        `Cannot produce to ${name} as it does not exist and autoCreateTopicEnable is off`,
      );
    }
    return this.upsert(name, {}).then(checkWritePerm);
  }

  /**
   * As readable(), and a consumer group's own retry or DLQ topic by name: those are never
   * registered (RocketMQ gives them one queue, perm 6), yet remoting consumers pull and
   * commit offsets on them. Checks only: nothing is returned.
   */
  readableQueue(name: string, queueId: number): void {
    if (!name.startsWith("%RETRY%") && !name.startsWith("%DLQ%")) {
      this.readable(name, queueId);
      return;
    }
    checkReadableTopic(name);
    if (queueId !== 0) {
      throw new BrokerError("QUEUE_NOT_FOUND", `No queue ${queueId} in ${name}: it has queue 0`);
    }
  }

  /** The topic, checked for READ perm and that `queueId` is one of its read queues. */
  readable(name: string, queueId: number): TopicConfig {
    checkReadableTopic(name);
    const topic = this.#topics.get(name);
    if (!topic) throw new BrokerError("TOPIC_NOT_FOUND", `No topic ${name}`);
    if (!(topic.perm & PERM_READ)) {
      throw new BrokerError(
        "TOPIC_PERMISSION_DENIED",
        `Cannot read ${name} as its perm ${topic.perm} lacks READ (4)`,
      );
    }
    if (!Number.isInteger(queueId) || queueId < 0 || queueId >= topic.readQueueNums) {
      throw new BrokerError(
        "QUEUE_NOT_FOUND",
        `No queue ${queueId} in ${name}: it has read queues 0-${topic.readQueueNums - 1}`,
      );
    }
    return topic;
  }
}

function checkWritePerm(topic: TopicConfig): TopicConfig {
  if (!(topic.perm & PERM_WRITE)) {
    throw new BrokerError(
      "TOPIC_PERMISSION_DENIED",
      `Cannot produce to ${topic.name} as its perm ${topic.perm} lacks WRITE (2)`,
    );
  }
  return topic;
}

function toTopic(t: StoredTopic): TopicConfig {
  return {
    name: t.topicName,
    readQueueNums: t.readQueueNums,
    writeQueueNums: t.writeQueueNums,
    perm: t.perm,
    order: t.order,
  };
}
