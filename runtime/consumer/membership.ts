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
import {
  AllocateMachineRoomNearby,
  AllocateMessageQueueAveragely,
  AllocateMessageQueueAveragelyByCircle,
  AllocateMessageQueueByConfig,
  AllocateMessageQueueByMachineRoom,
  AllocateMessageQueueConsistentHash,
  type AllocateMessageQueueStrategy,
  compareStrings,
  type MessageQueue,
  sortClientIds,
} from "./allocate.ts";

export const STRATEGY_NAMES = [
  "AVG",
  "AVG_BY_CIRCLE",
  "CONSISTENT_HASH",
  "CONFIG",
  "MACHINE_ROOM",
  "MACHINE_ROOM_NEARBY",
] as const;
export type StrategyName = typeof STRATEGY_NAMES[number];

/** A bound per member: RocketMQ has none, but a heartbeat is outside input. */
export const SUBSCRIPTIONS_PER_MEMBER_MAX = 64;
/** CONFIG queue ids per member and queue ids per lock() call. */
export const QUEUE_IDS_MAX = 1024;
const CLIENT_ID_CHARS_MAX = 255;
const NAME_CHARS_MAX = 255; // %RETRY%group topics reach 255 (checkReadableTopic)
const TAGS_CHARS_MAX = 4096; // tag expressions and SQL92 filters
const QUEUE_ID_MAX = 2 ** 31 - 1; // Java int
const NAME_PATTERN = /^[%|a-zA-Z0-9_-]+$/; // protocol/names.ts
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

export type MembershipErrorCode =
  | "GROUP_ILLEGAL"
  | "TOPIC_ILLEGAL"
  | "CLIENT_ID_ILLEGAL"
  | "SUBSCRIPTION_ILLEGAL"
  | "STRATEGY_ILLEGAL"
  | "QUEUE_ID_ILLEGAL"
  | "MEMBERS_MAX";

/** A refused heartbeat, lock or query: outside input, never our bug. */
export class MembershipError extends Error {
  override name = "MembershipError";
  constructor(readonly code: MembershipErrorCode, message: string) {
    super(message);
  }
}

export interface Subscription {
  readonly topic: string;
  /** RocketMQ's subString; "*" when absent. */
  readonly tags?: string;
}

export interface HeartbeatData {
  readonly clientId: string;
  readonly subscriptions: readonly Subscription[];
  /** The allocation strategy this client runs; "AVG" when absent. */
  readonly strategy?: StrategyName;
  /** Machine room of the client; required by MACHINE_ROOM and MACHINE_ROOM_NEARBY. */
  readonly room?: string;
  /** CONFIG: the queue ids this client always pulls, on every broker of the topic. */
  readonly configQueues?: readonly number[];
}

export interface QueueRef {
  readonly brokerName: string;
  readonly queueId: number;
}

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

interface Member {
  readonly clientId: string;
  /** By topic; tags "*" when absent. */
  readonly subscriptions: ReadonlyMap<string, string>;
  readonly strategy: StrategyName;
  readonly room: string | undefined;
  readonly configQueues: readonly number[];
  lastHeartbeatMs: number;
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

function strategyFor(
  member: Member,
  subscribed: readonly Member[],
  mqAll: readonly MessageQueue[],
): AllocateMessageQueueStrategy {
  switch (member.strategy) {
    case "AVG":
      return new AllocateMessageQueueAveragely();
    case "AVG_BY_CIRCLE":
      return new AllocateMessageQueueAveragelyByCircle();
    case "CONSISTENT_HASH":
      return new AllocateMessageQueueConsistentHash();
    case "CONFIG": {
      const ids = new Set(member.configQueues);
      return new AllocateMessageQueueByConfig(mqAll.filter((mq) => ids.has(mq.queueId)));
    }
    case "MACHINE_ROOM":
      return new AllocateMessageQueueByMachineRoom(
        subscribed.flatMap((m) => m.room === undefined ? [] : [m.room]),
      );
    case "MACHINE_ROOM_NEARBY": {
      const rooms = new Map(subscribed.map((m) => [m.clientId, m.room]));
      return new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(), {
        brokerDeployIn: (mq) => roomOfBroker(mq.brokerName),
        consumerDeployIn: (clientId) => rooms.get(clientId),
      });
    }
  }
}

/** `room@broker` → room; a name without one has no room. */
function roomOfBroker(brokerName: string): string | undefined {
  const at = brokerName.indexOf("@");
  return at > 0 ? brokerName.slice(0, at) : undefined;
}

function parseHeartbeat(data: HeartbeatData, nowMs: number): Member {
  const clientId = data?.clientId;
  if (
    typeof clientId !== "string" || clientId.length > CLIENT_ID_CHARS_MAX ||
    !VISIBLE_ASCII.test(clientId)
  ) {
    throw new MembershipError(
      "CLIENT_ID_ILLEGAL",
      `Cannot register client id ${
        JSON.stringify(String(clientId).slice(0, 80))
      } as it must be 1-${CLIENT_ID_CHARS_MAX} visible ASCII characters`,
    );
  }
  const strategy = data.strategy ?? "AVG";
  if (!(STRATEGY_NAMES as readonly string[]).includes(strategy)) {
    throw strategyError(clientId, `strategy ${JSON.stringify(String(strategy).slice(0, 40))}`);
  }
  const room = data.room;
  if (room !== undefined && (typeof room !== "string" || !NAME_PATTERN.test(room))) {
    throw strategyError(clientId, `room ${JSON.stringify(String(room).slice(0, 40))}`);
  }
  if ((strategy === "MACHINE_ROOM" || strategy === "MACHINE_ROOM_NEARBY") && !room) {
    throw strategyError(clientId, `strategy ${strategy} without a room`);
  }
  let configQueues: number[];
  try {
    configQueues = checkQueueIds(data.configQueues ?? []);
  } catch {
    throw strategyError(clientId, "configQueues");
  }
  return {
    clientId,
    subscriptions: parseSubscriptions(clientId, data.subscriptions),
    strategy,
    room,
    configQueues,
    lastHeartbeatMs: nowMs,
  };
}

function strategyError(clientId: string, what: string): MembershipError {
  return new MembershipError(
    "STRATEGY_ILLEGAL",
    `Cannot register client ${clientId} with ${what}: strategies are ${
      STRATEGY_NAMES.join(", ")
    }, rooms 1-${NAME_CHARS_MAX} of [%|a-zA-Z0-9_-] (MACHINE_ROOM* need one), configQueues up to ${QUEUE_IDS_MAX} ids`,
  );
}

function parseSubscriptions(
  clientId: string,
  subscriptions: readonly Subscription[],
): Map<string, string> {
  const refuse = (why: string) =>
    new MembershipError(
      "SUBSCRIPTION_ILLEGAL",
      `Cannot register client ${clientId} as its subscriptions ${why}`,
    );
  if (!Array.isArray(subscriptions)) throw refuse("are not a list");
  if (subscriptions.length > SUBSCRIPTIONS_PER_MEMBER_MAX) {
    throw refuse(`exceed ${SUBSCRIPTIONS_PER_MEMBER_MAX}: ${subscriptions.length}`);
  }
  const byTopic = new Map<string, string>();
  for (const s of subscriptions) {
    const topic = s?.topic;
    if (!isName(topic)) throw refuse(`name topic ${JSON.stringify(String(topic).slice(0, 80))}`);
    if (byTopic.has(topic)) throw refuse(`name topic ${topic} twice`);
    const tags = s.tags ?? "*";
    if (typeof tags !== "string" || tags.length === 0 || tags.length > TAGS_CHARS_MAX) {
      throw refuse(`give topic ${topic} tags that are not 1-${TAGS_CHARS_MAX} characters`);
    }
    byTopic.set(topic, tags);
  }
  return byTopic;
}

function sameMember(a: Member, b: Member): boolean {
  return a.strategy === b.strategy && a.room === b.room &&
    a.configQueues.join() === b.configQueues.join() &&
    a.subscriptions.size === b.subscriptions.size &&
    [...a.subscriptions].every(([topic, tags]) => b.subscriptions.get(topic) === tags);
}

function isName(name: unknown): name is string {
  return typeof name === "string" && name.length <= NAME_CHARS_MAX && NAME_PATTERN.test(name);
}

function checkName(code: MembershipErrorCode, kind: string, name: string): void {
  if (!isName(name)) {
    throw new MembershipError(
      code,
      `Cannot use ${kind} name ${
        JSON.stringify(String(name).slice(0, 80))
      } as it must be 1-${NAME_CHARS_MAX} characters of [%|a-zA-Z0-9_-]`,
    );
  }
}

/** Distinct, ascending; each a Java int >= 0, at most QUEUE_IDS_MAX of them. */
function checkQueueIds(queueIds: readonly number[]): number[] {
  if (
    !Array.isArray(queueIds) || queueIds.length > QUEUE_IDS_MAX ||
    !queueIds.every((id) => Number.isInteger(id) && id >= 0 && id <= QUEUE_ID_MAX)
  ) {
    throw new MembershipError(
      "QUEUE_ID_ILLEGAL",
      `Cannot use queue ids ${
        JSON.stringify(String(queueIds).slice(0, 80))
      } as they must be up to ${QUEUE_IDS_MAX} integers from 0 to ${QUEUE_ID_MAX}`,
    );
  }
  return [...new Set(queueIds)].sort((a, b) => a - b);
}
