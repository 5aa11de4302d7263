// QueryRoute and QueryAssignment (reference/rocketmq-grpc.md §4, §11.1): a topic's queues
// as RocketMQ 5 clients see them. Every queue is on one broker whose endpoints are the
// access point the client used (as the proxy in cluster mode answers), so the client
// keeps talking to this process. The broker picks the store queue on send (Node always
// sends queue 0) and a receive pops every queue, so queue ids here are for show, except
// that Node needs queue 0 readable and writable.
import { PERM_READ, PERM_WRITE, type TopicConfig } from "../../runtime/protocol/types.ts";
import type { Caller } from "./auth.ts";
import { type Req, type Res, unary } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { MessageType } from "./message.ts";
import { OK } from "./status.ts";

const Permission = { NONE: 1, READ: 2, WRITE: 3, READ_WRITE: 4 } as const;

function permission(topic: TopicConfig, queueId: number): number {
  const read = (topic.perm & PERM_READ) !== 0 && queueId < topic.readQueueNums;
  const write = (topic.perm & PERM_WRITE) !== 0 && queueId < topic.writeQueueNums;
  return read && write
    ? Permission.READ_WRITE
    : read
    ? Permission.READ
    : write
    ? Permission.WRITE
    : Permission.NONE;
}

function messageQueues(deps: GrpcDeps, topic: TopicConfig, caller: Caller, endpoints: unknown) {
  const accept: number[] = [MessageType.NORMAL, MessageType.FIFO, MessageType.DELAY];
  if (deps.transactions) accept.push(MessageType.TRANSACTION);
  const broker = { name: deps.brokerName, id: 0, endpoints };
  const count = Math.max(topic.readQueueNums, topic.writeQueueNums, 1);
  return Array.from({ length: count }, (_, id) => ({
    topic: deps.names.outward(topic.name, caller.namespace),
    id,
    permission: permission(topic, id),
    broker,
    acceptMessageTypes: accept,
  }));
}

export function routeHandlers(deps: GrpcDeps) {
  return {
    queryRoute: unary(deps, "QueryRoute", async (req: Req, caller): Promise<Res> => {
      const name = deps.names.inward(req.topic, caller.namespace, "topic");
      deps.auth.allow(caller, "see", { topic: name });
      const topic = await deps.api.call((b) => b.getTopic(name));
      return { status: OK, messageQueues: messageQueues(deps, topic, caller, req.endpoints) };
    }),
    queryAssignment: unary(deps, "QueryAssignment", async (req: Req, caller): Promise<Res> => {
      const name = deps.names.inward(req.topic, caller.namespace, "topic");
      const group = deps.names.inward(req.group, caller.namespace, "group");
      deps.auth.allow(caller, "subscribe", { topic: name, group });
      const topic = await deps.api.call((b) => b.getTopic(name));
      // One assignment: a receive pops every queue of the topic (the proxy's queue -1).
      const [queue0] = messageQueues(deps, topic, caller, req.endpoints);
      return { status: OK, assignments: [{ messageQueue: queue0 }] };
    }),
  };
}
