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

export interface GroupLimits {
  groupsMax: number;
}

export class GroupRegistry {
  readonly #groups = new Map<string, ConsumerGroupConfig>();
  readonly #metadata: MetadataStore;
  readonly #limits: GroupLimits;
  /** Groups being created, counted against groupsMax while their write is in flight. */
  readonly #creating = new Set<string>();

  private constructor(metadata: MetadataStore, limits: GroupLimits) {
    this.#metadata = metadata;
    this.#limits = limits;
  }

  /** Loads every stored group, even past groupsMax (a lowered limit refuses new ones only). */
  static async load(metadata: MetadataStore, limits: GroupLimits): Promise<GroupRegistry> {
    const registry = new GroupRegistry(metadata, limits);
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
    const creating = !current && !this.#creating.has(group);
    if (creating) this.#checkRoom(group);
    if (creating) this.#creating.add(group);
    try {
      const stored = await this.#metadata.upsertConsumerGroup({ groupName: group, ...settings });
      this.#groups.set(group, stored);
      return toGroupView(stored);
    } catch (err) {
      if (err instanceof MetadataError) {
        throw new BrokerError("INVALID_PARAMETER", err.message, {}, { cause: err });
      }
      throw err;
    } finally {
      if (creating) this.#creating.delete(group);
    }
  }

  #checkRoom(group: string): void {
    const held = this.#groups.size + this.#creating.size;
    if (held >= this.#limits.groupsMax) {
      throw new BrokerError(
        "TOO_MANY_GROUPS",
        `Cannot create consumer group ${group}: the broker holds ${held} groups, groupsMax is ${this.#limits.groupsMax}`,
      );
    }
  }

  /** Every group, sorted by name. */
  list(): GroupView[] {
    return [...this.#groups.values()].map(toGroupView)
      .sort((a, b) => a.group < b.group ? -1 : a.group > b.group ? 1 : 0);
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
