// A topic's queues across broker groups, from its resolved route: global ids (slot ×
// QUEUE_ID_STRIDE + the group's own id, runtime/protocol/cluster_types.ts) both ways, the
// writable list produce picks from and the readable groups consumers read. Pure.
import { globalQueueId, splitQueueId } from "../protocol/cluster_types.ts";
import { BrokerError } from "../protocol/errors.ts";
import { PERM_READ, PERM_WRITE } from "../protocol/types.ts";
import type { ResolvedGroup, ResolvedTopicRoute } from "./route_source.ts";

export interface WritableQueue {
  queueId: number;
  group: ResolvedGroup;
  localQueueId: number;
}

export class TopicQueues {
  readonly #bySlot = new Map<number, ResolvedGroup>();
  readonly #byName = new Map<string, ResolvedGroup>();
  #writable?: WritableQueue[];

  constructor(readonly route: ResolvedTopicRoute) {
    for (const g of route.groups) {
      this.#bySlot.set(g.slot, g);
      this.#byName.set(g.link.name, g);
    }
  }

  get topic(): string {
    return this.route.topic;
  }

  /** Every writable queue of the active groups, by global id (the order a sharding key
   * hashes over: RocketMQ's queue list, brokers sorted, queues 0..writeQueueNums−1). */
  writable(): WritableQueue[] {
    return this.#writable ??= this.route.groups
      .filter((g) => g.state === "active" && (g.perm & PERM_WRITE) !== 0)
      .flatMap((group) =>
        Array.from({ length: group.writeQueueNums }, (_, localQueueId) => ({
          queueId: globalQueueId(group.slot, localQueueId),
          group,
          localQueueId,
        }))
      )
      .sort((a, b) => a.queueId - b.queueId);
  }

  /** Groups consumers read from: readable ones, draining included (sorted by slot). */
  readable(): ResolvedGroup[] {
    return this.route.groups.filter((g) => (g.perm & PERM_READ) !== 0 && g.readQueueNums > 0);
  }

  /** Every group of the route, whatever its permission (offsets, admin views). */
  all(): ResolvedGroup[] {
    return this.route.groups;
  }

  /** The group that owns a global id and the id inside it; undefined for an unknown slot
   * or a negative / non-integer id. */
  owner(queueId: number): { group: ResolvedGroup; localQueueId: number } | undefined {
    if (!Number.isInteger(queueId) || queueId < 0) return undefined;
    const { slot, localQueueId } = splitQueueId(queueId);
    const group = this.#bySlot.get(slot);
    return group && { group, localQueueId };
  }

  group(name: string): ResolvedGroup | undefined {
    return this.#byName.get(name);
  }

  /** A group's own id as a global one; -1 when the group is not in the route (no queue
   * of this topic's route is meant: never the group's own id, another group's queue). */
  toGlobal(groupName: string, localQueueId: number): number {
    const g = this.#byName.get(groupName);
    if (localQueueId < 0) return localQueueId;
    return g === undefined ? -1 : globalQueueId(g.slot, localQueueId);
  }
}

/** Why no group of the topic can serve `what`: none live (BROKER_UNAVAILABLE), or none with
 * the permission (TOPIC_PERMISSION_DENIED: draining, read-only). */
export function noGroupFor(queues: TopicQueues, what: string, lacking: string): BrokerError {
  return queues.all().length === 0
    ? new BrokerError("BROKER_UNAVAILABLE", `Cannot ${what}: none of its broker groups is live`)
    : new BrokerError("TOPIC_PERMISSION_DENIED", `Cannot ${what}: ${lacking}`);
}

/** Sorted by name (where one copy lives: a schedule's home, the assignment's group). */
export function byName<T extends { name: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** A message (or any answer with a queue id) from `groupName`, its id made global. */
export function globalized<T extends { queueId: number }>(
  queues: TopicQueues,
  groupName: string,
  answer: T,
): T {
  return { ...answer, queueId: queues.toGlobal(groupName, answer.queueId) };
}
