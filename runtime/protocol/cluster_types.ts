// Wire types of a topic's route across broker groups (issue #26): what
// `GET /v1/topics/{topic}/route` answers, from one broker (its own group) or from the
// cluster router in stateless functions (every group the topic spans). Pure.
//
// Queue ids clients see are global and stable: slot × QUEUE_ID_STRIDE + the group's own
// queue id, where a topic gives each broker group a slot when the group joins the topic
// and never reuses it (RocketMQ addresses a queue as (brokerName, queueId); one integer is
// what our HTTP API and SDK carry). A topic on one group has slot 0, so its ids are the
// broker's own: a single broker and a one-group cluster show the same ids.

import { BrokerError } from "./errors.ts";
import type { CronScheduleInput } from "./types.ts";

/** Room for a group's own queue ids (topicQueueNumsMax's default) inside one slot: a
 * topic on a cluster has at most this many queues on each group (queueCountsOnGroup). */
export const QUEUE_ID_STRIDE = 1024;

/** Queue ids are 0-65535 everywhere in the HTTP API (RocketMQ's queueId is a short in
 * places): functions/routes/params.ts checks ids against it. */
export const QUEUE_ID_MAX = 65535;

/** Slots a topic can hand out (64): a slot's ids must stay within QUEUE_ID_MAX. A topic that
 * used them all (groups added and removed 64 times) is re-created to go on. */
export const TOPIC_SLOTS_MAX = Math.floor((QUEUE_ID_MAX + 1) / QUEUE_ID_STRIDE);

/** Refuses queue counts a slot cannot hold (INVALID_PARAMETER), before anything changes. */
export function checkQueueCountsOnGroup(
  topic: string,
  counts: { readQueueNums?: number; writeQueueNums?: number },
): void {
  const most = Math.max(counts.readQueueNums ?? 0, counts.writeQueueNums ?? 0);
  if (most > QUEUE_ID_STRIDE) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot give topic ${topic} ${most} queues on a broker group: a cluster topic has at most ${QUEUE_ID_STRIDE} per group (QUEUE_ID_STRIDE); add broker groups instead`,
    );
  }
}

/** Refuses a slot whose queue ids would pass QUEUE_ID_MAX (TOPIC_ROUTE_CONFLICT). */
export function checkSlot(topic: string, slot: number): void {
  if (slot >= TOPIC_SLOTS_MAX) {
    throw new BrokerError(
      "TOPIC_ROUTE_CONFLICT",
      `Cannot give topic ${topic} another broker group: it has used all ${TOPIC_SLOTS_MAX} slots (slots are never reused, queue ids stop at ${QUEUE_ID_MAX}); re-create the topic`,
    );
  }
}

/** "active": produced to and read; "draining": read only, until consumers are done. */
export type GroupRouteState = "active" | "draining";

export interface TopicRouteGroupView {
  /** The broker group's name (brokerName). */
  name: string;
  /** Where its master serves the HTTP API (http:// or https://); "" when not registered. */
  url: string;
  /** Its master's leadership epoch (fencing token); 0 for a group without replication. */
  epoch: number;
  state: GroupRouteState;
  /** This topic's slot in the group (global id = slot × QUEUE_ID_STRIDE + local id). */
  slot: number;
}

export interface TopicRouteQueueView {
  /** The global id clients use. */
  queueId: number;
  brokerGroup: string;
  /** The id inside its group. */
  localQueueId: number;
  readable: boolean;
  writable: boolean;
}

export interface TopicRouteView {
  topic: string;
  brokerGroups: TopicRouteGroupView[];
  queues: TopicRouteQueueView[];
}

/** GET /v1/groups/{group}/assignment?queueIds=0,1,1024: allocate over these queue ids (the
 * topic's global ids across broker groups, as the cluster router passes them) instead of
 * the broker's own queues. */
export interface AssignmentOptions {
  queueIds?: number[];
  /** With `queueIds`: the broker group of each slot (index = slot, a global id's
   * `splitQueueId().slot`), so each queue carries its own group's name, and the
   * machine-room strategies its room (`room@name`). Without it every queue is this
   * broker's. Names may not contain commas (the HTTP query lists them comma-separated). */
  slotBrokers?: string[];
}

export function globalQueueId(slot: number, localQueueId: number): number {
  return slot * QUEUE_ID_STRIDE + localQueueId;
}

export function splitQueueId(queueId: number): { slot: number; localQueueId: number } {
  return { slot: Math.floor(queueId / QUEUE_ID_STRIDE), localQueueId: queueId % QUEUE_ID_STRIDE };
}

/** A schedule whole, with its id, creation time and last tick: what the cluster router
 * moves to another broker group when it drains one (docs/cluster.md). */
export interface CronScheduleExport extends CronScheduleInput {
  id: string;
  createdAt: number;
  lastTickAt: number | null;
}
