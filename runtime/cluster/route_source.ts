// The seam between the cluster router's two halves (issue #26): the data plane
// (runtime/cluster/client*.ts — a BrokerClient that routes each call to the broker group
// that owns the queue) asks a ClusterRouteSource for live groups and topic routes; the
// control plane (the KV-backed source, topic records, expansion and drain) answers.
// Types only.
import type { BrokerClient, OpsApi, TransactionApi } from "../protocol/core_api.ts";
import type { GroupRouteState, TopicRouteView } from "../protocol/cluster_types.ts";

/** One live broker group: its master, reached over HTTP (split mode) or in-process (tests). */
export interface GroupLink {
  name: string;
  /** The master's HTTP base URL (http:// or https://). */
  url: string;
  epoch: number;
  client: BrokerClient & TransactionApi & Partial<OpsApi>;
  /** The first 20 hex characters of the message ids this master makes (IP, PID, random:
   * runtime/message_id.ts), when it registered them: find-by-id asks this group first. */
  idPrefix?: string;
}

/** A topic's groups joined with their live registrations. */
export interface ResolvedGroup {
  link: GroupLink;
  slot: number;
  state: GroupRouteState;
  readQueueNums: number;
  writeQueueNums: number;
  perm: number;
}

export interface ResolvedTopicRoute {
  topic: string;
  /** Sorted by slot. Groups of the record that are not live are left out. */
  groups: ResolvedGroup[];
  /** The wire view (global queue ids), as GET /v1/topics/{topic}/route answers. */
  view: TopicRouteView;
  /** The topic was created with `order: true` (its route record says so). */
  order?: boolean;
}

export interface ClusterRouteSource {
  /** Live groups of this cluster, sorted by name. */
  groups(): Promise<GroupLink[]>;
  /** The topic's route. With `create`, a topic without a record gets one spread over every
   * live group (auto-create on first produce); without, an unknown topic is TOPIC_NOT_FOUND. */
  topic(topic: string, options?: { create?: boolean }): Promise<ResolvedTopicRoute>;
  /** Drop cached routes (all, or one topic's): called on not-leader, an unreachable group or
   * an unknown queue, so the next call re-reads the coordination store. */
  invalidate(topic?: string): void;
  /** Route cache hits and misses since start (route_cache_hit_ratio). */
  cacheStats(): { hits: number; misses: number };
}
