// The LeaseKeeper's types: the clock and options it is given, what it reports (holding,
// loss reasons, eligibility). Apart from lease.ts so its steps (lease_candidate.ts) share them.
import type { Logger } from "../log.ts";
import type { LeaseSettings } from "./lease_rules.ts";
import type { LeaseRecord, LeaseStore } from "./lease_store.ts";

/** Time as the keeper sees it; tests pass a manual clock. */
export interface LeaseClock {
  /** Never goes back, never jumps with NTP; deadlines are judged by it. */
  monotonicMs(): number;
  /** Wall clock, ms since 1970: only for expiresAtMs, which other brokers read. */
  wallMs(): number;
  /** Calls `fn` once after `ms` of monotonic time; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

/** What this replica can say for itself in an election. */
export interface ReplicaEligibility {
  /** Epoch of the newest record in the CommitLog. */
  epoch: number;
  maxOffset: number;
  inSync: boolean;
}

export interface LeaseHolding {
  epoch: number;
  /** Monotonic time at which this holding ends unless renewed. */
  deadlineMonotonicMs: number;
}

export type LeaseLostReason =
  /** The deadline passed before a renew was confirmed (store slow, down or hanging). */
  | "DEADLINE_PASSED"
  /** A renew was refused: the record is no longer ours. */
  | "LEASE_TAKEN"
  /** stop() or release(). */
  | "STOPPED"
  /** supersede(): a peer showed a higher epoch than the one held. */
  | "SUPERSEDED";

export interface LeaseKeeperOptions {
  /** RocketMQ's brokerName: the replicas of one group share one lease. */
  brokerGroup: string;
  brokerId: number;
  address: string;
  store: LeaseStore;
  clock: LeaseClock;
  eligibility: () => ReplicaEligibility | Promise<ReplicaEligibility>;
  settings?: Partial<LeaseSettings>;
  onAcquired?: (holding: LeaseHolding) => void;
  onLost?: (lost: { epoch: number; reason: LeaseLostReason }) => void;
  log?: Logger;
  /** Default: a random UUID. Tests pass one to make records predictable. */
  session?: string;
}

/** The keeper's hold on the lease: the record as last confirmed and its deadline. */
export interface Holding {
  record: LeaseRecord;
  version: string;
  deadlineMonotonicMs: number;
  cancelDeadline: () => void;
}
