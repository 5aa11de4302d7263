// Who is in each consumer group, which queues each member should pull, and who holds the
// orderly-consumption lock of each queue: the broker's side of reference/rocketmq.md §13
// (ConsumerManager, ClientHousekeepingService, RebalanceLockManager).
//
// Pure and clock-injected: no timers. Heartbeats are stamped with `nowMs()`; the broker
// calls `expire(nowMs)` now and then (RocketMQ scans every 10 s) and tells the groups it
// returns to rebalance (NOTIFY_CONSUMER_IDS_CHANGED). A member stays in its group until
// expire() or unregister() removes it, so members(), assignment() and generation() always
// describe the same set: a consumer list and an epoch that disagreed would let two
// consumers compute different shares.
//
// Expiry is at exactly the timeout (silent for >= memberTimeoutMs, lock older than >=
// lockTimeoutMs); RocketMQ compares with > , one millisecond later.
//
// Locks are keyed (group, topic, queueId): this broker is the only broker group a client
// locks on (LOCK_BATCH_MQ with onlyThisBroker), so brokerName adds nothing. Only a
// member may lock, so every lock goes when its member goes and locks stay bounded.

import assert from "node:assert/strict";
import { compareStrings, type MessageQueue, sortClientIds } from "./allocate.ts";
import { checkName, checkQueueIds, parseHeartbeat, sameMember } from "./membership_checks.ts";
import { strategyFor } from "./membership_strategy.ts";
import {
  type HeartbeatData,
  type Member,
  MembershipError,
  type QueueRef,
} from "./membership_types.ts";

export { QUEUE_IDS_MAX, SUBSCRIPTIONS_PER_MEMBER_MAX } from "./membership_checks.ts";
export {
  type HeartbeatData,
  MembershipError,
  type MembershipErrorCode,
  type QueueRef,
  STRATEGY_NAMES,
  type StrategyName,
  type Subscription,
} from "./membership_types.ts";

export interface ConsumerMembershipOptions {
  /** Stamps heartbeats; the monotonic clock of the platform. */
  readonly nowMs: () => number;
  /** RocketMQ's channelExpiredTimeout: 120 s, four missed 30 s heartbeats. */
  readonly memberTimeoutMs?: number;
  /** RocketMQ's REBALANCE_LOCK_MAX_LIVE_TIME: 60 s; clients re-lock every 20 s. */
  readonly lockTimeoutMs?: number;
  /** Members over all groups; a heartbeat past it is refused. */
  readonly membersMax?: number;
}

interface Lock {
  readonly clientId: string;
  lastUpdateMs: number;
}

interface Group {
  readonly members: Map<string, Member>;
  generation: number;
  /** topic → queueId → lock. */
  readonly locks: Map<string, Map<number, Lock>>;
}

export class ConsumerMembership {
  readonly #nowMs: () => number;
  readonly #memberTimeoutMs: number;
  readonly #lockTimeoutMs: number;
  readonly #membersMax: number;
  readonly #groups = new Map<string, Group>();
  #membersCount = 0;
  /**
   * One counter for all groups, so a group that empties (and is forgotten) and fills
   * again gets a larger generation than before, never a reused one.
   */
  #generationLast = 0;

  constructor(options: ConsumerMembershipOptions) {
    this.#nowMs = options.nowMs;
    this.#memberTimeoutMs = options.memberTimeoutMs ?? 120_000;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 60_000;
    this.#membersMax = options.membersMax ?? 10_000;
    assert(typeof this.#nowMs === "function");
    assert(Number.isSafeInteger(this.#memberTimeoutMs) && this.#memberTimeoutMs > 0);
    assert(Number.isSafeInteger(this.#lockTimeoutMs) && this.#lockTimeoutMs > 0);
    assert(Number.isSafeInteger(this.#membersMax) && this.#membersMax > 0);
  }

  /**
   * Registers or refreshes `data.clientId` in `group`. True when membership changed: a
   * new member, or new subscriptions, strategy, room or config queues (all change shares).
   */
  heartbeat(group: string, data: HeartbeatData): boolean {
    checkName("GROUP_ILLEGAL", "group", group);
    const next = parseHeartbeat(data, this.#nowMs());
    const record = this.#groups.get(group);
    const previous = record?.members.get(next.clientId);
    if (previous === undefined && this.#membersCount >= this.#membersMax) {
      throw new MembershipError(
        "MEMBERS_MAX",
        `Cannot register client ${next.clientId} in group ${group} as members reached membersMax: ${this.#membersCount}`,
      );
    }
    if (previous !== undefined && sameMember(previous, next)) {
      previous.lastHeartbeatMs = next.lastHeartbeatMs;
      return false;
    }
    const target = record ?? { members: new Map(), generation: 0, locks: new Map() };
    if (record === undefined) this.#groups.set(group, target);
    if (previous === undefined) this.#membersCount += 1;
    target.members.set(next.clientId, next);
    target.generation = ++this.#generationLast;
    return true;
  }

  /** Removes the member and its locks (UNREGISTER_CLIENT); true if it was a member. */
  unregister(group: string, clientId: string): boolean {
    const record = this.#groups.get(group);
    if (record === undefined || !record.members.has(clientId)) return false;
    this.#remove(group, record, [clientId]);
    return true;
  }

  /** Groups with a live member subscribed to `topic`. */
  subscribedGroups(topic: string): string[] {
    const out: string[] = [];
    for (const [group, record] of this.#groups) {
      for (const m of record.members.values()) {
        if (m.subscriptions.has(topic)) {
          out.push(group);
          break;
        }
      }
    }
    return out;
  }

  /** Client ids of `group`, sorted as RocketMQ sorts cidAll. */
  members(group: string): string[] {
    return sortClientIds([...(this.#groups.get(group)?.members.keys() ?? [])]);
  }

  /** Rebalance epoch: larger after every membership change; 0 for a group with no members. */
  generation(group: string): number {
    return this.#groups.get(group)?.generation ?? 0;
  }

  /** Removes members silent for memberTimeoutMs or more, with their locks; changed groups, sorted. */
  expire(nowMs: number): string[] {
    const changed: string[] = [];
    for (const [group, record] of [...this.#groups]) {
      const silent = [...record.members.values()]
        .filter((m) => nowMs - m.lastHeartbeatMs >= this.#memberTimeoutMs)
        .map((m) => m.clientId);
      if (silent.length === 0) continue;
      this.#remove(group, record, silent);
      changed.push(group);
    }
    return changed.sort(compareStrings);
  }

  /**
   * The queues of `topic` (given as this broker's route lists them) that `clientId` should
   * pull, by the strategy it sent, over the sorted members subscribed to `topic`. A client
   * that is no member or does not subscribe gets []. MACHINE_ROOM and MACHINE_ROOM_NEARBY
   * read a queue's room from its broker name, `room@broker` (RocketMQ's convention), and a
   * consumer's from its heartbeat; MACHINE_ROOM consumes the rooms of all subscribed
   * members, so every member computes over the same queues. Throws AllocateArgumentError
   * where allocate.ts does (a NEARBY queue or member without a room).
   */
  assignment(
    group: string,
    clientId: string,
    topic: string,
    queues: readonly QueueRef[],
  ): MessageQueue[] {
    const member = this.#groups.get(group)?.members.get(clientId);
    if (member === undefined || !member.subscriptions.has(topic) || queues.length === 0) return [];
    const subscribed = [...this.#groups.get(group)!.members.values()]
      .filter((m) => m.subscriptions.has(topic));
    const mqAll = queues.map((q) => ({ topic, brokerName: q.brokerName, queueId: q.queueId }));
    const strategy = strategyFor(member, subscribed, mqAll);
    return strategy.allocate({
      consumerGroup: group,
      currentCid: clientId,
      mqAll,
      cidAll: sortClientIds(subscribed.map((m) => m.clientId)),
    });
  }

  /**
   * LOCK_BATCH_MQ: takes each queue that is free, already the client's (renewed) or whose
   * lock is older than lockTimeoutMs; returns the ids the client now holds, ascending.
   * A client that is no member of `group` gets none.
   */
  lock(group: string, clientId: string, topic: string, queueIds: readonly number[], nowMs: number) {
    checkName("TOPIC_ILLEGAL", "topic", topic);
    const ids = checkQueueIds(queueIds);
    const record = this.#groups.get(group);
    if (record === undefined || !record.members.has(clientId)) return [];
    let byQueue = record.locks.get(topic);
    if (byQueue === undefined) record.locks.set(topic, byQueue = new Map());
    const held: number[] = [];
    for (const queueId of ids) {
      const lock = byQueue.get(queueId);
      if (lock === undefined || lock.clientId === clientId || this.#expired(lock, nowMs)) {
        byQueue.set(queueId, { clientId, lastUpdateMs: nowMs });
        held.push(queueId);
      }
    }
    if (byQueue.size === 0) record.locks.delete(topic);
    return held;
  }

  /** UNLOCK_BATCH_MQ: releases those of the queues `clientId` holds; others are untouched. */
  unlock(group: string, clientId: string, topic: string, queueIds: readonly number[]): void {
    const ids = checkQueueIds(queueIds);
    const byQueue = this.#groups.get(group)?.locks.get(topic);
    if (byQueue === undefined) return;
    for (const queueId of ids) {
      if (byQueue.get(queueId)?.clientId === clientId) byQueue.delete(queueId);
    }
    if (byQueue.size === 0) this.#groups.get(group)!.locks.delete(topic);
  }

  /** The client holding an unexpired lock on the queue at `nowMs`, if any. */
  lockHolder(group: string, topic: string, queueId: number, nowMs: number): string | undefined {
    const lock = this.#groups.get(group)?.locks.get(topic)?.get(queueId);
    return lock === undefined || this.#expired(lock, nowMs) ? undefined : lock.clientId;
  }

  #expired(lock: Lock, nowMs: number): boolean {
    return nowMs - lock.lastUpdateMs >= this.#lockTimeoutMs;
  }

  #remove(group: string, record: Group, clientIds: readonly string[]): void {
    const gone = new Set(clientIds);
    for (const clientId of gone) {
      assert(record.members.delete(clientId));
      this.#membersCount -= 1;
    }
    assert(this.#membersCount >= 0);
    for (const [topic, byQueue] of record.locks) {
      for (const [queueId, lock] of byQueue) if (gone.has(lock.clientId)) byQueue.delete(queueId);
      if (byQueue.size === 0) record.locks.delete(topic);
    }
    record.generation = ++this.#generationLast;
    if (record.members.size === 0) {
      assert(record.locks.size === 0);
      this.#groups.delete(group);
    }
  }
}
