// Wire types of a topic's route across broker groups (issue #26): what
// `GET /v1/topics/{topic}/route` answers, from one broker (its own group) or from the
// cluster router in stateless functions (every group the topic spans). Pure.
//
// Queue ids clients see are global and stable: slot × QUEUE_ID_STRIDE + the group's own
// queue id, where a topic gives each broker group a slot when the group joins the topic
// and never reuses it (RocketMQ addresses a queue as (brokerName, queueId); one integer is
// what our HTTP API and SDK carry). A topic on one group has slot 0, so its ids are the
// broker's own: a single broker and a one-group cluster show the same ids.

/** Room for a group's own queue ids (topicQueueNumsMax's default) inside one slot. */
export const QUEUE_ID_STRIDE = 1024;

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
}

export function globalQueueId(slot: number, localQueueId: number): number {
  return slot * QUEUE_ID_STRIDE + localQueueId;
}

export function splitQueueId(queueId: number): { slot: number; localQueueId: number } {
  return { slot: Math.floor(queueId / QUEUE_ID_STRIDE), localQueueId: queueId % QUEUE_ID_STRIDE };
}
