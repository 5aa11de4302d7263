// A queue id a broker group answered, as clients see it (the one place that decides; used
// by POP, transactions, subscriptions, lookups and the operations views):
// - a queue of a topic whose route lists the group: its global id (slot × stride + id);
// - a group that is not in the topic's route (a check for a half message left on a group
//   removed from the topic), or a message redelivered from the group's %RETRY% queue
//   (POP answers it under its original topic): -1, "no queue of this topic's route" —
//   never the group's own id, which would name another group's queue;
// - a topic the cluster has no route for (%RETRY%<group>, %DLQ%<group>, system topics,
//   reported under that name): the group's own id, opaque (docs/cluster.md).
import { PROPERTY_RETRY_TOPIC } from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import { isSystemTopic } from "../protocol/names.ts";
import type { ClusterContext } from "./context.ts";
import type { TopicQueues } from "./queue_map.ts";

export const NO_GLOBAL_QUEUE = -1;

/** The topic's queues; "unrouted" for a topic without a cluster route (system topics are
 * never looked up: a route source may write a record for a topic its groups hold);
 * undefined when the route cannot be read now (ids are then NO_GLOBAL_QUEUE). */
export async function routeOf(
  ctx: ClusterContext,
  topic: string,
): Promise<TopicQueues | "unrouted" | undefined> {
  if (isSystemTopic(topic)) return "unrouted";
  try {
    return await ctx.queues(topic);
  } catch (err) {
    if (err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND") return "unrouted";
    return undefined;
  }
}

/** `queueId` of `topic` as group `groupName` numbers it, as clients see it (rules above). */
export async function globalIdOf(
  ctx: ClusterContext,
  topic: string,
  groupName: string,
  queueId: number,
): Promise<number> {
  return idIn(await routeOf(ctx, topic), groupName, queueId);
}

/** As globalIdOf with the route in hand. */
export function idIn(
  route: TopicQueues | "unrouted" | undefined,
  groupName: string,
  queueId: number,
): number {
  if (route === "unrouted") return queueId;
  return route === undefined ? NO_GLOBAL_QUEUE : route.toGlobal(groupName, queueId);
}

/** A message from `groupName` with its id as clients see it; a redelivery from the
 * group's %RETRY% queue (RETRY_TOPIC property, answered under its original topic) is -1. */
export function messageIn<T extends { queueId: number; properties?: Record<string, string> }>(
  route: TopicQueues | "unrouted" | undefined,
  groupName: string,
  m: T,
): T {
  const retried = route !== "unrouted" && m.properties?.[PROPERTY_RETRY_TOPIC] !== undefined;
  return { ...m, queueId: retried ? NO_GLOBAL_QUEUE : idIn(route, groupName, m.queueId) };
}
