// Queue allocation for clustering consumers: which queues of a topic this consumer pulls,
// given every queue and every consumer of its group. Six of RocketMQ's strategies
// (client/.../consumer/rebalance/*.java), computing the same assignment, so consumers of
// ours and Java consumers can share a group. Rules: reference/rocketmq.md, "Rebalance".
//
// Sorting. RocketMQ's RebalanceImpl sorts mqAll (by topic, brokerName, queueId) and
// cidAll (as strings) before calling a strategy, and every consumer must see the same
// order or queues go to two consumers or to none. Here each strategy sorts copies of its
// inputs itself, so no caller can forget; on the sorted lists RebalanceImpl passes, this
// changes nothing. mqAll is also made distinct, as RebalanceImpl builds it from a Set.
// cidAll is not: RocketMQ keeps a duplicate client id, and so do we.
//
// Bad input, as AbstractAllocateMessageQueueStrategy.check(): an empty currentCid, mqAll
// or cidAll throws (AllocateArgumentError; RocketMQ's IllegalArgumentException), and a
// currentCid missing from cidAll gets []. RebalanceImpl catches the throw and keeps the
// queues it holds, so a rebalancer should do the same. AllocateMessageQueueByConfig alone
// checks nothing: it returns its list whatever the input, as in RocketMQ.
//
// Pure: no clock, no log (RocketMQ logs "[BUG] ... not in cidAll"; our caller may), and
// the inputs are never mutated.

import { ConsistentHashRouter, type HashFunction } from "./consistent_hash_router.ts";

/** RocketMQ's MessageQueue: one queue of a topic on one broker group. */
export interface MessageQueue {
  readonly topic: string;
  readonly brokerName: string;
  readonly queueId: number;
}

export interface AllocateContext {
  readonly consumerGroup: string;
  /** This consumer's client id (RocketMQ's currentCID). */
  readonly currentCid: string;
  /** Every queue of the topic, any order. */
  readonly mqAll: readonly MessageQueue[];
  /** Every client id in the group (GET_CONSUMER_LIST_BY_GROUP), any order. */
  readonly cidAll: readonly string[];
}

export interface AllocateMessageQueueStrategy {
  /** RocketMQ's getName(): "AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", ... */
  readonly name: string;
  /** The queues `ctx.currentCid` should consume; a new array. */
  allocate(ctx: AllocateContext): MessageQueue[];
}

export type AllocateErrorCode =
  | "CURRENT_CID_EMPTY"
  | "MQ_ALL_EMPTY"
  | "CID_ALL_EMPTY"
  | "MACHINE_ROOM_EMPTY"
  | "VIRTUAL_NODE_COUNT_INVALID";

/** Input RocketMQ refuses with IllegalArgumentException. */
export class AllocateArgumentError extends Error {
  override name = "AllocateArgumentError";
  constructor(readonly code: AllocateErrorCode, message: string) {
    super(message);
  }
}

/** RocketMQ's MessageQueue.toString(), the key ConsistentHash hashes. */
export function messageQueueToString(mq: MessageQueue): string {
  return `MessageQueue [topic=${mq.topic}, brokerName=${mq.brokerName}, queueId=${mq.queueId}]`;
}

/** Java's String.compareTo: UTF-16 code units, not locale order. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** RocketMQ's MessageQueue.compareTo: topic, then brokerName, then queueId. */
export function compareMessageQueues(a: MessageQueue, b: MessageQueue): number {
  return compareStrings(a.topic, b.topic) || compareStrings(a.brokerName, b.brokerName) ||
    a.queueId - b.queueId;
}

/** A sorted copy without duplicates, as RebalanceImpl makes mqAll. */
export function sortMessageQueues(mqAll: readonly MessageQueue[]): MessageQueue[] {
  const sorted = [...mqAll].sort(compareMessageQueues);
  return sorted.filter((mq, i) => i === 0 || compareMessageQueues(sorted[i - 1], mq) !== 0);
}

/** A sorted copy, as RebalanceImpl makes cidAll; duplicates stay. */
export function sortClientIds(cidAll: readonly string[]): string[] {
  return [...cidAll].sort(compareStrings);
}

interface Prepared {
  readonly mqAll: MessageQueue[];
  readonly cidAll: string[];
  /** Position of currentCid in the sorted cidAll (its first, as Java's indexOf). */
  readonly index: number;
}

/** AbstractAllocateMessageQueueStrategy.check(), then the sort; undefined: not a member. */
function prepare(ctx: AllocateContext): Prepared | undefined {
  if (!ctx.currentCid) {
    throw new AllocateArgumentError("CURRENT_CID_EMPTY", "Cannot allocate as currentCid is empty");
  }
  if (!ctx.mqAll || ctx.mqAll.length === 0) {
    throw new AllocateArgumentError("MQ_ALL_EMPTY", "Cannot allocate as mqAll is empty");
  }
  if (!ctx.cidAll || ctx.cidAll.length === 0) {
    throw new AllocateArgumentError("CID_ALL_EMPTY", "Cannot allocate as cidAll is empty");
  }
  const cidAll = sortClientIds(ctx.cidAll);
  const index = cidAll.indexOf(ctx.currentCid);
  if (index < 0) return undefined;
  return { mqAll: sortMessageQueues(ctx.mqAll), cidAll, index };
}

/**
 * The default: contiguous runs, the first N % C consumers taking one queue more.
 * 8 queues, 3 consumers: [0,1,2] [3,4,5] [6,7]. 3 queues, 5 consumers: [0] [1] [2] [] [].
 */
export class AllocateMessageQueueAveragely implements AllocateMessageQueueStrategy {
  readonly name = "AVG";

  allocate(ctx: AllocateContext): MessageQueue[] {
    const prepared = prepare(ctx);
    if (prepared === undefined) return [];
    const { mqAll, cidAll, index } = prepared;
    const mod = mqAll.length % cidAll.length;
    const averageSize = mqAll.length <= cidAll.length
      ? 1
      : Math.floor(mqAll.length / cidAll.length) + (index < mod ? 1 : 0);
    const startIndex = index < mod ? index * averageSize : index * averageSize + mod;
    const range = Math.min(averageSize, mqAll.length - startIndex);
    return range > 0 ? mqAll.slice(startIndex, startIndex + range) : [];
  }
}

/** Round robin: queue j goes to consumer j % C. 8 queues, 3 consumers: [0,3,6] [1,4,7] [2,5]. */
export class AllocateMessageQueueAveragelyByCircle implements AllocateMessageQueueStrategy {
  readonly name = "AVG_BY_CIRCLE";

  allocate(ctx: AllocateContext): MessageQueue[] {
    const prepared = prepare(ctx);
    if (prepared === undefined) return [];
    const { mqAll, cidAll, index } = prepared;
    const result: MessageQueue[] = [];
    for (let i = index; i < mqAll.length; i += cidAll.length) result.push(mqAll[i]);
    return result;
  }
}

export interface ConsistentHashOptions {
  /** Virtual nodes per consumer on the ring; RocketMQ's virtualNodeCnt, default 10. */
  readonly virtualNodeCnt?: number;
  /** RocketMQ's customHashFunction; default md5Hash (first 4 bytes of MD5). */
  readonly hashFunction?: HashFunction;
}

/**
 * A ring of `virtualNodeCnt` virtual nodes per consumer (`${cid}-${k}`); each queue goes
 * to the first node at or after the hash of messageQueueToString(queue). A consumer
 * joining or leaving moves only the queues next to its nodes. See consistent_hash_router.ts.
 */
export class AllocateMessageQueueConsistentHash implements AllocateMessageQueueStrategy {
  readonly name = "CONSISTENT_HASH";
  readonly #virtualNodeCnt: number;
  readonly #hashFunction: HashFunction | undefined;

  constructor(options: ConsistentHashOptions = {}) {
    const virtualNodeCnt = options.virtualNodeCnt ?? 10;
    if (!Number.isInteger(virtualNodeCnt) || virtualNodeCnt < 0) {
      throw new AllocateArgumentError(
        "VIRTUAL_NODE_COUNT_INVALID",
        `Cannot build a hash ring as virtualNodeCnt is not a whole number >= 0: ${virtualNodeCnt}`,
      );
    }
    this.#virtualNodeCnt = virtualNodeCnt;
    this.#hashFunction = options.hashFunction;
  }

  allocate(ctx: AllocateContext): MessageQueue[] {
    const prepared = prepare(ctx);
    if (prepared === undefined) return [];
    const router = new ConsistentHashRouter(
      prepared.cidAll,
      this.#virtualNodeCnt,
      this.#hashFunction,
    );
    return prepared.mqAll.filter((mq) =>
      router.routeNode(messageQueueToString(mq)) === ctx.currentCid
    );
  }
}

/** A fixed list, whatever the group looks like; RocketMQ checks no input here either. */
export class AllocateMessageQueueByConfig implements AllocateMessageQueueStrategy {
  readonly name = "CONFIG";
  readonly #messageQueueList: readonly MessageQueue[];

  constructor(messageQueueList: readonly MessageQueue[]) {
    this.#messageQueueList = [...messageQueueList];
  }

  allocate(_ctx: AllocateContext): MessageQueue[] {
    return [...this.#messageQueueList];
  }
}

/**
 * Only queues on brokers named `room@name` whose room is in `consumeridcs`; those n are
 * shared by all C consumers: n / C from index·(n / C), plus queue index + (n / C)·C when
 * index < n % C. Unlike Averagely, the extra queues come from the tail.
 */
export class AllocateMessageQueueByMachineRoom implements AllocateMessageQueueStrategy {
  readonly name = "MACHINE_ROOM";
  readonly #consumeridcs: ReadonlySet<string>;

  /** `consumeridcs`: the machine rooms this group consumes from (RocketMQ's name). */
  constructor(consumeridcs: Iterable<string>) {
    this.#consumeridcs = new Set(consumeridcs);
  }

  allocate(ctx: AllocateContext): MessageQueue[] {
    const prepared = prepare(ctx);
    if (prepared === undefined) return [];
    const { cidAll, index } = prepared;
    const premqAll = prepared.mqAll.filter((mq) => {
      const parts = javaSplit(mq.brokerName, "@");
      return parts.length === 2 && this.#consumeridcs.has(parts[0]);
    });
    const mod = Math.floor(premqAll.length / cidAll.length);
    const rem = premqAll.length % cidAll.length;
    const result = premqAll.slice(mod * index, mod * index + mod);
    if (rem > index) result.push(premqAll[index + mod * cidAll.length]);
    return result;
  }
}

/**
 * Java's String.split(separator) for a one-character separator: trailing empty strings
 * are dropped, so "room@broker@" has two parts and "room@" one.
 */
function javaSplit(text: string, separator: string): string[] {
  const parts = text.split(separator);
  while (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  return parts;
}

/** Where brokers and consumers run; both must name a non-empty machine room. */
export interface MachineRoomResolver {
  brokerDeployIn(mq: MessageQueue): string | undefined;
  consumerDeployIn(clientId: string): string | undefined;
}

/**
 * A proxy that keeps traffic inside a machine room: the inner strategy splits my room's
 * queues among my room's consumers; then, room by room (in room order), the queues of
 * every room with no consumer at all are split among the whole group.
 */
export class AllocateMachineRoomNearby implements AllocateMessageQueueStrategy {
  readonly name: string;

  constructor(
    readonly strategy: AllocateMessageQueueStrategy,
    readonly resolver: MachineRoomResolver,
  ) {
    this.name = `MACHINE_ROOM_NEARBY-${strategy.name}`;
  }

  allocate(ctx: AllocateContext): MessageQueue[] {
    const prepared = prepare(ctx);
    if (prepared === undefined) return [];
    const mqByRoom = groupByRoom(prepared.mqAll, (mq) => {
      const room = this.resolver.brokerDeployIn(mq);
      if (room) return room;
      throw new AllocateArgumentError(
        "MACHINE_ROOM_EMPTY",
        `Cannot allocate as the machine room is empty for ${messageQueueToString(mq)}`,
      );
    });
    const cidByRoom = groupByRoom(prepared.cidAll, (cid) => {
      const room = this.resolver.consumerDeployIn(cid);
      if (room) return room;
      throw new AllocateArgumentError(
        "MACHINE_ROOM_EMPTY",
        `Cannot allocate as the machine room is empty for consumer ${cid}`,
      );
    });
    const myRoom = this.resolver.consumerDeployIn(ctx.currentCid)!;
    const result: MessageQueue[] = [];
    const mqInMyRoom = mqByRoom.get(myRoom);
    if (mqInMyRoom !== undefined) {
      const cidInMyRoom = cidByRoom.get(myRoom)!;
      result.push(...this.strategy.allocate({ ...ctx, mqAll: mqInMyRoom, cidAll: cidInMyRoom }));
    }
    for (const [room, mqInRoom] of mqByRoom) {
      if (room === myRoom || cidByRoom.has(room)) continue;
      result.push(...this.strategy.allocate({ ...ctx, mqAll: mqInRoom, cidAll: prepared.cidAll }));
    }
    return result;
  }
}

/** Items by room, rooms in Java TreeMap order, items in their given order. */
function groupByRoom<T>(items: readonly T[], roomOf: (item: T) => string): Map<string, T[]> {
  const byRoom = new Map<string, T[]>();
  for (const item of items) {
    const room = roomOf(item);
    const members = byRoom.get(room);
    if (members === undefined) byRoom.set(room, [item]);
    else members.push(item);
  }
  return new Map([...byRoom].sort(([a], [b]) => compareStrings(a, b)));
}
