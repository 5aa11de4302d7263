// Who may become master of a broker group: RocketMQ's controller rule
// (DefaultElectPolicy; reference/rocketmq.md §15, "Election") without the controller.
// Pure: the lease keeper (lease.ts) feeds it the replica states that brokers publish in
// KV and a clock reading, so the rule is tested here without KV.
//
//   1. Only alive replicas count: a state published less than replicaStateTtlMs ago.
//   2. Only in-sync replicas count, unless enableElectUncleanMaster (default false: an
//      out-of-sync replica would lose acknowledged messages by becoming master).
//   3. Sort by epoch descending (a replica holding a later epoch's records has the newer
//      history; offsets of different epochs are not comparable), then maxOffset
//      descending, then brokerElectionPriority ascending, then brokerId ascending so
//      that every broker computes the same single winner from the same states.
//
// Rule 2 of RocketMQ ("keep a valid old master") is the lease itself: nobody runs the
// election while the lease record is live.

/** What a broker publishes about its replica, and what the rule ranks. */
export interface ReplicaState {
  /** RocketMQ's brokerId: unique within the broker group, an integer >= 0. */
  brokerId: number;
  /** Where peers reach this broker (HTTP/replication address). */
  address: string;
  /** Epoch of the newest record in this replica's CommitLog (its epoch file's last entry). */
  epoch: number;
  /** CommitLog max physical offset (commitLogOffset of the end), bytes. */
  maxOffset: number;
  /** In the master's SyncStateSet at the last contact (gap < haMaxGapNotInSync). */
  inSync: boolean;
  /** brokerElectionPriority: lower is preferred when epoch and offset are equal. */
  priority: number;
  /** Publisher's wall clock at publication, ms since 1970. */
  updatedAtMs: number;
}

export interface ElectionOptions {
  /** Wall clock of the broker judging, ms since 1970. */
  nowMs: number;
  /** A state older than this is from a broker presumed dead, ms. */
  replicaStateTtlMs: number;
  /** Let an out-of-sync replica win when no in-sync one is alive (RocketMQ default false). */
  enableElectUncleanMaster: boolean;
}

/** Negative when `a` should be master before `b`; 0 only for the same broker. */
export function compareCandidates(a: ReplicaState, b: ReplicaState): number {
  if (a.epoch !== b.epoch) return b.epoch - a.epoch;
  if (a.maxOffset !== b.maxOffset) return b.maxOffset - a.maxOffset;
  if (a.priority !== b.priority) return a.priority - b.priority;
  return a.brokerId - b.brokerId;
}

export function isAlive(state: ReplicaState, nowMs: number, replicaStateTtlMs: number): boolean {
  return nowMs - state.updatedAtMs < replicaStateTtlMs;
}

/**
 * The replicas that may be master, best first. Empty when no alive replica qualifies.
 * A broker appearing twice counts once, with its freshest state (the better one when two
 * have the same updatedAtMs, so the input order never matters).
 */
export function rankCandidates(
  states: readonly ReplicaState[],
  options: ElectionOptions,
): ReplicaState[] {
  const freshest = new Map<number, ReplicaState>();
  for (const s of states) {
    const seen = freshest.get(s.brokerId);
    const newer = seen === undefined || s.updatedAtMs > seen.updatedAtMs ||
      (s.updatedAtMs === seen.updatedAtMs &&
        (s.inSync !== seen.inSync ? s.inSync : compareCandidates(s, seen) < 0));
    if (newer) freshest.set(s.brokerId, s);
  }
  const alive = [...freshest.values()].filter((s) =>
    isAlive(s, options.nowMs, options.replicaStateTtlMs)
  );
  const inSync = alive.filter((s) => s.inSync);
  const pool = inSync.length > 0 || !options.enableElectUncleanMaster ? inSync : alive;
  return pool.sort(compareCandidates);
}

/** The one replica that should be master, or undefined when none qualifies. */
export function electMaster(
  states: readonly ReplicaState[],
  options: ElectionOptions,
): ReplicaState | undefined {
  return rankCandidates(states, options)[0];
}
