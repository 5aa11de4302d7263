// Response schemas of the operations views (runtime/protocol/ops_types.ts).
import { z } from "@hono/zod-openapi";
import { GroupView, QueueOffsetInfo } from "./wire_schemas.ts";

export const Groups = z.object({ groups: z.array(GroupView) }).openapi("Groups");

export const TopicStats = z.object({
  topic: z.string(),
  queues: z.array(
    z.object({
      queueId: z.int(),
      minOffset: z.int(),
      maxOffset: z.int(),
      lastStoreTimestamp: z.int().openapi({
        description: "Newest message's store time; 0 if empty",
      }),
    }).openapi("QueueStats"),
  ),
  messages: z.int().openapi({ description: "Messages kept (max - min over queues)" }),
  messagesWritten: z.int().openapi({ description: "Messages ever written (sum of max offsets)" }),
  bytesProducedSinceStart: z.int(),
  produceRatePerSec: z.number().openapi({ description: "Over the last minute or so" }),
}).openapi("TopicStats");

export const GroupProgress = z.object({
  group: GroupView,
  topics: z.array(
    z.object({
      topic: z.string(),
      queues: z.array(QueueOffsetInfo),
      totalLag: z.int(),
    }).openapi("GroupTopicProgress"),
  ),
  totalLag: z.int(),
  dlqMessages: z.int(),
}).openapi("GroupProgress");

export const ClusterView = z.object({
  mode: z.enum(["single", "replicated"]),
  nodes: z.array(
    z.object({
      brokerGroup: z.string(),
      brokerId: z.int(),
      role: z.string(),
      epoch: z.int(),
      maxOffset: z.int(),
      address: z.string().optional(),
      inSync: z.boolean().optional(),
      lagBytes: z.int().optional(),
    }).openapi("ClusterNode"),
  ),
}).openapi("ClusterView");

export const DrainStatus = z.object({
  topic: z.string(),
  brokerGroup: z.string(),
  consumers: z.array(z.string()).openapi({
    description: "Consumer groups looked at: subscribed here, with a position here, or named",
  }),
  groups: z.array(
    z.object({
      group: z.string(),
      unconsumed: z.int().openapi({
        description: "Not consumed yet (from the min offset when the group has no position here)",
      }),
      inFlight: z.int().openapi({ description: "POP messages received and not acked" }),
      retry: z.int().openapi({ description: "Waiting in the group's %RETRY% topic here" }),
    }).openapi("DrainOwed"),
  ),
  delayed: z.int().openapi({
    description: "Delayed and timer messages waiting on this broker (all topics)",
  }),
  openTransactions: z.int().openapi({ description: "Half messages of the topic not decided" }),
  drained: z.boolean().openapi({ description: "True when nothing is owed" }),
}).openapi("DrainStatus");

export const Readiness = z.object({
  ready: z.boolean(),
  phase: z.enum(["starting", "recovering", "ready", "stopping"]),
  recovery: z.object({
    scannedBytes: z.int(),
    totalBytes: z.int(),
    etaSeconds: z.number().nullable(),
  }).optional(),
}).openapi("Readiness");
