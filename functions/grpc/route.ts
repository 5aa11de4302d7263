// QueryRoute and QueryAssignment (reference/rocketmq-grpc.md §4, §11.1): a topic's queues
// as RocketMQ 5 clients see them, from the core's route (topicRoute): each broker group is
// a broker, its queues keep their ids inside the group (RocketMQ addresses a queue as
// (broker, queueId)), and every broker's endpoints are the access point the client used (as
// the proxy in cluster mode answers), so the client keeps talking to this process. The
// router picks the store queue on send and a receive pops every queue, so the ids matter
// for the offset and pull RPCs only (storeQueueId); Node needs a queue 0 readable and
// writable, which every group has.
import type { BrokerClient } from "../../runtime/protocol/core_api.ts";
import type { TopicRouteQueueView } from "../../runtime/protocol/cluster_types.ts";
import type { Caller } from "./auth.ts";
import { type Req, type Res, unary } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { MessageType } from "./message.ts";
import { OK } from "./status.ts";

const Permission = { NONE: 1, READ: 2, WRITE: 3, READ_WRITE: 4 } as const;

function permission(q: TopicRouteQueueView): number {
  return q.readable && q.writable
    ? Permission.READ_WRITE
    : q.readable
    ? Permission.READ
    : q.writable
    ? Permission.WRITE
    : Permission.NONE;
}

async function messageQueues(deps: GrpcDeps, name: string, caller: Caller, endpoints: unknown) {
  const accept: number[] = [MessageType.NORMAL, MessageType.FIFO, MessageType.DELAY];
  if (deps.transactions) accept.push(MessageType.TRANSACTION);
  const route = await deps.api.call((b) => b.topicRoute(name));
  return route.queues.map((q) => ({
    topic: deps.names.outward(name, caller.namespace),
    id: q.localQueueId,
    permission: permission(q),
    broker: { name: q.brokerGroup, id: 0, endpoints },
    acceptMessageTypes: accept,
  }));
}

/** The core's queue id of a client's (broker, queue id): the global id of that group's
 * queue (docs/cluster.md); the id itself when no broker is named or the route has none. */
export async function storeQueueId(
  b: BrokerClient,
  topic: string,
  mq: { id?: number; broker?: { name?: string } } | undefined,
): Promise<number> {
  const id = Number(mq?.id ?? 0);
  const broker = mq?.broker?.name;
  if (!broker) return id;
  const route = await b.topicRoute(topic, { cached: true });
  const q = route.queues.find((q) => q.brokerGroup === broker && q.localQueueId === id);
  return q?.queueId ?? id;
}

export function routeHandlers(deps: GrpcDeps) {
  return {
    queryRoute: unary(deps, "QueryRoute", async (req: Req, caller): Promise<Res> => {
      const name = deps.names.inward(req.topic, caller.namespace, "topic");
      deps.auth.allow(caller, "see", { topic: name });
      return { status: OK, messageQueues: await messageQueues(deps, name, caller, req.endpoints) };
    }),
    queryAssignment: unary(deps, "QueryAssignment", async (req: Req, caller): Promise<Res> => {
      const name = deps.names.inward(req.topic, caller.namespace, "topic");
      const group = deps.names.inward(req.group, caller.namespace, "group");
      deps.auth.allow(caller, "subscribe", { topic: name, group });
      // One assignment: a receive pops every queue of the topic (the proxy's queue -1).
      const [queue0] = await messageQueues(deps, name, caller, req.endpoints);
      return { status: OK, assignments: [{ messageQueue: queue0 }] };
    }),
  };
}
