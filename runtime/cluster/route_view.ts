// A broker group's queues in a topic's route view (GET /v1/topics/{topic}/route): global
// ids from the group's slot, readable and writable from its queue counts, perm and route
// state. Pure; the single Broker (its own group, slot 0) and the cluster router share it.
import {
  globalQueueId,
  type GroupRouteState,
  type TopicRouteQueueView,
} from "../protocol/cluster_types.ts";
import { PERM_READ, PERM_WRITE, type TopicConfig } from "../protocol/types.ts";

export type QueueShape = Pick<TopicConfig, "readQueueNums" | "writeQueueNums" | "perm">;

export function groupQueues(
  brokerGroup: string,
  slot: number,
  state: GroupRouteState,
  shape: QueueShape,
): TopicRouteQueueView[] {
  const readable = (shape.perm & PERM_READ) !== 0;
  const writable = state === "active" && (shape.perm & PERM_WRITE) !== 0;
  const count = Math.max(shape.readQueueNums, shape.writeQueueNums);
  return Array.from({ length: count }, (_, localQueueId) => ({
    queueId: globalQueueId(slot, localQueueId),
    brokerGroup,
    localQueueId,
    readable: readable && localQueueId < shape.readQueueNums,
    writable: writable && localQueueId < shape.writeQueueNums,
  }));
}
