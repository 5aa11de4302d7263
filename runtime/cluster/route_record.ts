// A topic's membership in broker groups, as the coordination store keeps it (issue #26):
// one record per topic under ["mq", "topic_routes", cluster, topic], written only with
// compare-and-set (KvPort.checkAndSet) so two functions processes that create or expand
// the same topic at once cannot both win. Queue counts are not here: each group's master
// registers its topics' queue counts in the route table (runtime/route_registry.ts), and
// the router joins the two. Slots are handed out from `nextSlot` and never reused, so a
// global queue id (runtime/protocol/cluster_types.ts) never changes meaning.
import type { GroupRouteState } from "../protocol/cluster_types.ts";

export const TOPIC_ROUTES_PREFIX = ["mq", "topic_routes"] as const;

export interface TopicRouteGroup {
  brokerGroup: string;
  slot: number;
  state: GroupRouteState;
  /** Set by each drain (a new id each time): a remove checks, inside its compare-and-set,
   * that the group is still in the drain whose status it verified (topic_expansion.ts). */
  drainId?: string;
}

export interface TopicRouteRecord {
  topic: string;
  groups: TopicRouteGroup[];
  /** Created with `order: true` (docs/cluster.md, Order per sharding key): the data plane
   * hashes keys over a fixed queue list (draining groups' queues stay in it) and fails a
   * send whose key lands on a queue it cannot write rather than remap it, as RocketMQ's
   * orderTopicConf. */
  order?: boolean;
  /** The next slot to hand out; slots of removed groups are not reused. */
  nextSlot: number;
  updatedAtMs: number;
}

export function topicRouteKey(cluster: string, topic: string): readonly string[] {
  return [...TOPIC_ROUTES_PREFIX, cluster, topic];
}

export function encodeTopicRoute(record: TopicRouteRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

export function decodeTopicRoute(bytes: Uint8Array): TopicRouteRecord | undefined {
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes));
    return typeof v?.topic === "string" && Array.isArray(v?.groups) &&
        Number.isInteger(v?.nextSlot)
      ? v
      : undefined;
  } catch {
    return undefined;
  }
}
