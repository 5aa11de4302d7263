// What the operations views answer (the admin CLI, the dashboard, scripts): topic
// statistics, a group's progress across topics, the cluster, and readiness. Pure types,
// like types.ts, importable from functions/, cli/ and browsers.
import type { GroupView, QueueOffsetInfo } from "./types.ts";

/** One queue of a topic: the offsets it holds (max - min messages are kept). */
export interface QueueStats {
  queueId: number;
  minOffset: number;
  maxOffset: number;
  /** Store time of the newest message, 0 for an empty queue. */
  lastStoreTimestamp: number;
}

export interface TopicStats {
  topic: string;
  queues: QueueStats[];
  /** Messages kept (sum over queues of max - min). */
  messages: number;
  /** Messages ever written (sum of max offsets). */
  messagesWritten: number;
  /** Bytes of message bodies produced through this broker since it started. */
  bytesProducedSinceStart: number;
  /** Messages per second over the last minute or so (since start when shorter). */
  produceRatePerSec: number;
}

/** One topic a group consumes: each queue's position and lag (mqadmin consumerProgress). */
export interface GroupTopicProgress {
  topic: string;
  queues: QueueOffsetInfo[];
  totalLag: number;
}

export interface GroupProgress {
  group: GroupView;
  topics: GroupTopicProgress[];
  totalLag: number;
  /** Messages in the group's dead-letter queue. */
  dlqMessages: number;
}

/** One broker of the cluster as this node sees it. */
export interface ClusterNode {
  brokerGroup: string;
  brokerId: number;
  role: string;
  epoch: number;
  maxOffset: number;
  address?: string;
  inSync?: boolean;
  /** Bytes the replica is behind the master's log, when known. */
  lagBytes?: number;
}

export interface ClusterView {
  mode: "single" | "replicated";
  nodes: ClusterNode[];
}

/** Readiness: whether the broker serves, and while it recovers, how far it got. */
export interface ReadinessInfo {
  ready: boolean;
  phase: "starting" | "recovering" | "ready" | "stopping";
  recovery?: { scannedBytes: number; totalBytes: number; etaSeconds: number | null };
}
