// Consumer groups: their settings, loaded at open and kept in memory (the POP and webhook
// paths read them per message), written through to the metadata store.
import {
  type ConsumerGroupConfig,
  MetadataError,
  type MetadataStore,
} from "../../storage/metadata/metadata_store.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkGroup } from "../protocol/names.ts";
import type { GroupSettings, GroupView } from "../protocol/types.ts";

export class GroupRegistry {
  readonly #groups = new Map<string, ConsumerGroupConfig>();
  readonly #metadata: MetadataStore;

  private constructor(metadata: MetadataStore) {
    this.#metadata = metadata;
  }

  static async load(metadata: MetadataStore): Promise<GroupRegistry> {
    const registry = new GroupRegistry(metadata);
    for (const g of await metadata.listConsumerGroups()) registry.#groups.set(g.groupName, g);
    return registry;
  }

  /** The stored settings, or undefined for a group never created. */
  find(group: string): ConsumerGroupConfig | undefined {
    return this.#groups.get(group);
  }

  /**
   * Creates a consumer group, or replaces its settings (PUT semantics: a setting left out
   * takes its default). With no settings an existing group is left as it is.
   */
  async upsert(group: string, settings: GroupSettings = {}): Promise<GroupView> {
    checkGroup(group);
    const current = this.#groups.get(group);
    if (current && Object.keys(settings).length === 0) return toGroupView(current);
    try {
      const stored = await this.#metadata.upsertConsumerGroup({ groupName: group, ...settings });
      this.#groups.set(group, stored);
      return toGroupView(stored);
    } catch (err) {
      if (err instanceof MetadataError) {
        throw new BrokerError("INVALID_PARAMETER", err.message, {}, { cause: err });
      }
      throw err;
    }
  }

  get(group: string): Promise<GroupView> {
    checkGroup(group);
    const config = this.#groups.get(group);
    if (!config) {
      return Promise.reject(new BrokerError("GROUP_NOT_FOUND", `No consumer group ${group}`));
    }
    return Promise.resolve(toGroupView(config));
  }

  /** Resolves when the group was created (consuming needs one), else rejects with
   * GROUP_NOT_FOUND. */
  existing(group: string): Promise<void> {
    checkGroup(group);
    if (!this.#groups.has(group)) {
      return Promise.reject(
        new BrokerError(
          "GROUP_NOT_FOUND",
          `No consumer group ${group}; create it with PUT /v1/groups/${group}`,
        ),
      );
    }
    return Promise.resolve();
  }
}

export function toGroupView(g: ConsumerGroupConfig): GroupView {
  return {
    group: g.groupName,
    messageModel: g.messageModel,
    consumeFromWhere: g.consumeFromWhere,
    consumeTimestampMs: g.consumeTimestampMs,
    retryMaxTimes: g.retryMaxTimes,
    retryBackoffMs: g.retryBackoffMs ? [...g.retryBackoffMs] : null,
    orderly: g.orderly,
  };
}
