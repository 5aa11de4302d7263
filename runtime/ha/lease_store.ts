// Where a broker group's lease and its replicas' states live, behind one interface so
// tests can hand the keeper (lease.ts) a store that hangs, loses responses or lies about
// time. KvLeaseStore keeps them in Deno KV through our KvPort (Deno.openKv or @deno/kv),
// so brokers on Deno and Bun share them through one KV Connect database.
//
// Keys and values (values are UTF-8 JSON in a Uint8Array: runtimes.md, "KV", says store
// only our own bytes so Deno and Bun read each other's writes):
//
//   ["edgemq", "lease", brokerGroup]             -> LeaseRecord, one per broker group
//   ["edgemq", "replica", brokerGroup, brokerId] -> ReplicaState, one per broker
//
// The lease record is written only by compare-and-set on its versionstamp and never with
// expireIn: KV expiry is lazy (values linger ~60 s, reliability.md §6.7), so the deadline
// lives in the value (expiresAtMs) and the record is never deleted, because its epoch
// must survive for the next holder to count from it (runtimes.md, "Pitfalls").
import type { KvPort } from "../platform/kv_port.ts";
import type { ReplicaState } from "./election.ts";

/** The lease of one broker group. */
export interface LeaseRecord {
  /** brokerId of the holder. */
  owner: number;
  /** The holder's address, for clients and replicas to find the master. */
  address: string;
  /** Fencing token: one more than the previous holder's; unchanged while one holder renews. */
  epoch: number;
  /**
   * Holder's wall clock at the start of its last take or renew, plus leaseTtlMs, ms since
   * 1970. 0 after a graceful release. Others may take the lease once their wall clock
   * passes this plus leaseSafetyMarginMs.
   */
  expiresAtMs: number;
  /**
   * Random per keeper instance: tells the holder's own writes from those of an earlier
   * incarnation of the same broker (a restarted broker takes a new epoch).
   */
  session: string;
}

export interface LeaseRead {
  record: LeaseRecord | null;
  /** The record's versionstamp; null when there is no record. */
  version: string | null;
}

export type LeaseWriteResult = { ok: true; version: string } | { ok: false };

export interface LeaseStore {
  /** A strongly consistent read of the group's lease record. */
  readLease(brokerGroup: string): Promise<LeaseRead>;
  /**
   * Writes `record` only if the stored version is still `expectedVersion` (null: only if
   * there is no record); `{ok: false}` when another write came first.
   */
  writeLease(
    brokerGroup: string,
    expectedVersion: string | null,
    record: LeaseRecord,
  ): Promise<LeaseWriteResult>;
  /** Overwrites this broker's published replica state. */
  publishReplica(brokerGroup: string, state: ReplicaState): Promise<void>;
  /** Every published replica state of the group, dead or alive; undecodable ones skipped. */
  readReplicas(brokerGroup: string): Promise<ReplicaState[]>;
  removeReplica(brokerGroup: string, brokerId: number): Promise<void>;
}

export const LEASE_PREFIX = ["edgemq", "lease"] as const;
export const REPLICA_PREFIX = ["edgemq", "replica"] as const;
/** Replica states read per election; more brokers than this in one group is a bug. */
export const REPLICAS_PER_GROUP_MAX = 64;

/** A stored lease value that is not a lease record: written by something else. */
export class LeaseRecordError extends Error {
  override name = "LeaseRecordError";
}

export function encodeLeaseRecord(record: LeaseRecord): Uint8Array {
  const { owner, address, epoch, expiresAtMs, session } = record;
  return new TextEncoder().encode(JSON.stringify({ owner, address, epoch, expiresAtMs, session }));
}

export function decodeLeaseRecord(bytes: Uint8Array): LeaseRecord {
  let v: Partial<LeaseRecord> | null;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new LeaseRecordError("Cannot read the lease record: its value is not UTF-8 JSON", {
      cause,
    });
  }
  const valid = v !== null && typeof v === "object" && isId(v.owner) &&
    typeof v.address === "string" && isId(v.epoch) && Number.isSafeInteger(v.expiresAtMs) &&
    typeof v.session === "string";
  if (!valid) {
    throw new LeaseRecordError(
      `Cannot read the lease record: expected {owner, address, epoch, expiresAtMs, session}, ` +
        `found ${JSON.stringify(v).slice(0, 200)}`,
    );
  }
  return v as LeaseRecord;
}

export function encodeReplicaState(state: ReplicaState): Uint8Array {
  const { brokerId, address, epoch, maxOffset, inSync, priority, updatedAtMs } = state;
  return new TextEncoder().encode(
    JSON.stringify({ brokerId, address, epoch, maxOffset, inSync, priority, updatedAtMs }),
  );
}

/** undefined for a value that is not a replica state. */
export function decodeReplicaState(bytes: Uint8Array): ReplicaState | undefined {
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    const valid = v !== null && typeof v === "object" && isId(v.brokerId) &&
      typeof v.address === "string" && isId(v.epoch) && isId(v.maxOffset) &&
      typeof v.inSync === "boolean" && Number.isSafeInteger(v.priority) &&
      Number.isSafeInteger(v.updatedAtMs);
    return valid ? v as ReplicaState : undefined;
  } catch {
    return undefined;
  }
}

function isId(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

/** The lease store in Deno KV. Does not own `kv`: the caller closes it. */
export class KvLeaseStore implements LeaseStore {
  constructor(readonly kv: KvPort) {}

  async readLease(brokerGroup: string): Promise<LeaseRead> {
    const entry = await this.kv.get([...LEASE_PREFIX, brokerGroup]);
    if (entry === null) return { record: null, version: null };
    return { record: decodeLeaseRecord(entry.value), version: entry.versionstamp };
  }

  async writeLease(
    brokerGroup: string,
    expectedVersion: string | null,
    record: LeaseRecord,
  ): Promise<LeaseWriteResult> {
    const key = [...LEASE_PREFIX, brokerGroup];
    const result = await this.kv.checkAndSet(key, expectedVersion, encodeLeaseRecord(record));
    return result.ok ? { ok: true, version: result.versionstamp } : { ok: false };
  }

  async publishReplica(brokerGroup: string, state: ReplicaState): Promise<void> {
    await this.kv.set([...REPLICA_PREFIX, brokerGroup, state.brokerId], encodeReplicaState(state));
  }

  async readReplicas(brokerGroup: string): Promise<ReplicaState[]> {
    const entries = await this.kv.list([...REPLICA_PREFIX, brokerGroup], {
      limit: REPLICAS_PER_GROUP_MAX,
    });
    const states: ReplicaState[] = [];
    for (const e of entries) {
      const state = decodeReplicaState(e.value);
      if (state !== undefined && state.brokerId === e.key[3]) states.push(state);
    }
    return states;
  }

  async removeReplica(brokerGroup: string, brokerId: number): Promise<void> {
    await this.kv.delete([...REPLICA_PREFIX, brokerGroup, brokerId]);
  }
}
