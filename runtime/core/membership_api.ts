// Long-lived consumers: heartbeat, queue assignment by the group's strategy, and queue
// locks for ordered consumption (RocketMQ's ClientManageProcessor and rebalance).
import { BrokerError } from "../protocol/errors.ts";
import type { AssignmentView, HeartbeatRequest, MembersView } from "../protocol/types.ts";
import { type AssignmentOptions, splitQueueId } from "../protocol/cluster_types.ts";
import { type ConsumerMembership, MembershipError } from "../consumer/membership.ts";
import { AllocateArgumentError } from "../consumer/allocate.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { TopicRegistry } from "./topic_registry.ts";

export interface MembershipApiDeps {
  membership: ConsumerMembership;
  topics: TopicRegistry;
  groups: GroupRegistry;
  brokerName: string;
  nowMs: () => number;
}

export class MembershipApi {
  constructor(private readonly d: MembershipApiDeps) {}

  async heartbeat(group: string, data: HeartbeatRequest): Promise<MembersView> {
    await this.d.groups.existing(group);
    for (const s of data.subscriptions ?? []) this.d.topics.readable(s.topic, 0);
    refuseBadArguments(() => this.d.membership.heartbeat(group, data));
    return this.members(group);
  }

  async unregister(group: string, clientId: string): Promise<MembersView> {
    await this.d.groups.existing(group);
    this.d.membership.unregister(group, clientId);
    return this.members(group);
  }

  members(group: string): MembersView {
    const m = this.d.membership;
    return { group, generation: m.generation(group), members: m.members(group) };
  }

  /** The queues of `topic` that `clientId` should consume now, by the group's strategy;
   * over `options.queueIds` when given (the cluster router's global ids). */
  async assignment(
    group: string,
    clientId: string,
    topic: string,
    options: AssignmentOptions = {},
  ): Promise<AssignmentView> {
    await this.d.groups.existing(group);
    const config = this.d.topics.readable(topic, 0);
    const ids = options.queueIds === undefined
      ? [...Array(config.readQueueNums).keys()]
      : checkQueueIdList(options.queueIds);
    const brokerOf = slotBrokersOf(options, this.d.brokerName);
    const queues = ids.map((queueId) => ({ brokerName: brokerOf(queueId), queueId }));
    const m = this.d.membership;
    const mine = refuseBadArguments(() => m.assignment(group, clientId, topic, queues));
    return {
      group,
      clientId,
      topic,
      generation: m.generation(group),
      queueIds: mine.map((q) => q.queueId),
    };
  }

  /** Ordered consumption: the queues `clientId` now holds (free, its own, or expired locks). */
  async lockQueues(
    group: string,
    clientId: string,
    topic: string,
    queueIds: number[],
    unlock = false,
  ): Promise<number[]> {
    await this.d.groups.existing(group);
    this.d.topics.readable(topic, 0);
    const m = this.d.membership;
    if (unlock) {
      refuseBadArguments(() => m.unlock(group, clientId, topic, queueIds));
      return [];
    }
    // Only a member may lock (its locks go when it goes); the membership layer answers a
    // stranger an empty list, as RocketMQ does, so the refusal that says why is made here.
    if (!m.members(group).includes(clientId)) {
      throw new BrokerError(
        "CLIENT_NOT_MEMBER",
        `Cannot lock queues of ${topic} for client ${clientId} as it has no live heartbeat in group ${group}: send POST /v1/groups/${group}/heartbeat first, then every 30 s`,
      );
    }
    return refuseBadArguments(() => m.lock(group, clientId, topic, queueIds, this.d.nowMs()));
  }
}

function refuseBadArguments<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof MembershipError || err instanceof AllocateArgumentError) {
      throw new BrokerError("INVALID_PARAMETER", (err as Error).message, {}, { cause: err });
    }
    throw err;
  }
}

/** Each queue's broker group: its slot's entry of `slotBrokers` (the cluster router's
 * groups), or this broker when there is none. */
function slotBrokersOf(
  options: AssignmentOptions,
  self: string,
): (queueId: number) => string {
  const names = options.slotBrokers;
  if (names === undefined) return () => self;
  const bad = (why: string) =>
    new BrokerError("INVALID_PARAMETER", `Cannot use slotBrokers: ${why}`);
  if (options.queueIds === undefined) throw bad("it names the slots of queueIds, which is missing");
  if (!Array.isArray(names) || !names.every((n) => typeof n === "string" && !n.includes(","))) {
    throw bad("it must be a list of broker group names without commas");
  }
  return (queueId) => {
    const name = names[splitQueueId(queueId).slot];
    if (!name) {
      throw bad(
        `queue ${queueId} is in slot ${splitQueueId(queueId).slot}, which it does not name`,
      );
    }
    return name;
  };
}

/** Distinct non-negative integer ids, ascending (every member must compute over the same
 * list in the same order). */
function checkQueueIdList(queueIds: unknown): number[] {
  if (
    !Array.isArray(queueIds) ||
    !queueIds.every((id) => Number.isSafeInteger(id) && id >= 0 && id <= 0x7fffffff)
  ) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      "queueIds must be a list of queue ids (integers >= 0)",
    );
  }
  return [...new Set(queueIds as number[])].sort((a, b) => a - b);
}
