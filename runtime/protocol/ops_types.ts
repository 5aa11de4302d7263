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

/** What one consumer group is still owed on a topic on this broker (drain status). */
export interface DrainOwed {
  group: string;
  /** Messages not consumed yet, over the topic's queues here (from the queue's min offset
   * when the group holds no position here: all of them are owed). */
  unconsumed: number;
  /** POP messages received and not acked yet (invisible), from the topic or the group's
   * %RETRY% topic. */
  inFlight: number;
  /** Messages waiting in the group's %RETRY% topic here. */
  retry: number;
}

/** "What is still owed on topic T on this broker": a broker group may leave a topic's route
 * only when `drained` (docs/cluster.md, Drain and remove). */
export interface DrainStatus {
  topic: string;
  brokerGroup: string;
  /** Every consumer group looked at: subscribed here, holding a position here, or named. */
  consumers: string[];
  /** Consumer groups owed anything (the others are left out). */
  groups: DrainOwed[];
  /** Delayed and timer messages waiting on this broker. The timer wheel does not index
   * them by topic, so this counts every topic's: a removal waits for all of them. */
  delayed: number;
  /** Transaction half messages of the topic not committed or rolled back yet. */
  openTransactions: number;
  /** True when nothing is owed: no group above, delayed 0, openTransactions 0. */
  drained: boolean;
}
