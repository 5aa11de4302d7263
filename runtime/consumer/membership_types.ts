// What a consumer sends and what the membership table keeps of it: strategy names, the
// heartbeat and member records, and the error a refused heartbeat, lock or query throws.
// A leaf: the checks, the strategy choice and the table all import it.

export const STRATEGY_NAMES = [
  "AVG",
  "AVG_BY_CIRCLE",
  "CONSISTENT_HASH",
  "CONFIG",
  "MACHINE_ROOM",
  "MACHINE_ROOM_NEARBY",
] as const;
export type StrategyName = typeof STRATEGY_NAMES[number];

export type MembershipErrorCode =
  | "GROUP_ILLEGAL"
  | "TOPIC_ILLEGAL"
  | "CLIENT_ID_ILLEGAL"
  | "SUBSCRIPTION_ILLEGAL"
  | "STRATEGY_ILLEGAL"
  | "QUEUE_ID_ILLEGAL"
  | "MEMBERS_MAX";

/** A refused heartbeat, lock or query: outside input, never our bug. */
export class MembershipError extends Error {
  override name = "MembershipError";
  constructor(readonly code: MembershipErrorCode, message: string) {
    super(message);
  }
}

export interface Subscription {
  readonly topic: string;
  /** RocketMQ's subString; "*" when absent. */
  readonly tags?: string;
}

export interface HeartbeatData {
  readonly clientId: string;
  readonly subscriptions: readonly Subscription[];
  /** The allocation strategy this client runs; "AVG" when absent. */
  readonly strategy?: StrategyName;
  /** Machine room of the client; required by MACHINE_ROOM and MACHINE_ROOM_NEARBY. */
  readonly room?: string;
  /** CONFIG: the queue ids this client always pulls, on every broker of the topic. */
  readonly configQueues?: readonly number[];
}

export interface QueueRef {
  readonly brokerName: string;
  readonly queueId: number;
}

/** A member as kept: its heartbeat, checked and normalised. */
export interface Member {
  readonly clientId: string;
  /** By topic; tags "*" when absent. */
  readonly subscriptions: ReadonlyMap<string, string>;
  readonly strategy: StrategyName;
  readonly room: string | undefined;
  readonly configQueues: readonly number[];
  lastHeartbeatMs: number;
}
