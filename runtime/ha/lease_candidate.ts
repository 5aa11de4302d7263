// One poll of a LeaseKeeper that does not hold the lease (lease.ts): read the record,
// publish this replica's state, and take the lease back when the record is still ours, or
// take it at the next epoch once it has expired and the election rule names this broker.
import type { ReplicaState } from "./election.ts";
import { electionAllows, type LeaseSettings } from "./lease_rules.ts";
import type { LeaseRecord } from "./lease_store.ts";
import type { LeaseKeeperOptions } from "./lease_types.ts";
import type { StoreOutcome } from "./store_calls.ts";

/** What a candidate's poll uses of its keeper (lease.ts hands it over). */
export interface CandidateKeeper {
  readonly options: LeaseKeeperOptions;
  readonly settings: LeaseSettings;
  /** Monotonic ms when the keeper was made: how long a new group has waited. */
  readonly startedMonotonicMs: number;
  /** No take at or below it (see LeaseKeeper.supersede()). */
  passedEpoch(): number;
  setPassedEpoch(epoch: number): void;
  running(): boolean;
  /** A store call from the loop (store_calls.ts); none once the keeper stops. */
  call<T>(fn: () => Promise<T>): Promise<StoreOutcome<T>>;
  /** Publishes this replica's state; undefined when eligibility() failed. */
  publish(): Promise<ReplicaState | undefined>;
  /** The record as just read (lastSeenRecord()). */
  seen(record: LeaseRecord | null): void;
  isMine(record: LeaseRecord | null): boolean;
  /** CAS the record to ours at `epoch`; returns the delay before the next step. */
  take(current: LeaseRecord | null, version: string | null, epoch: number): Promise<number>;
  /** CAS our record to expired, so peers may elect at once. */
  expire(record: LeaseRecord, version: string | null): Promise<void>;
}

/** One poll as candidate; returns the delay before the next step. */
export async function candidateStep(k: CandidateKeeper): Promise<number> {
  const { clock, store, brokerGroup } = k.options;
  const poll = k.settings.leasePollIntervalMs;
  const read = await k.call(() => store.readLease(brokerGroup));
  const self = await k.publish();
  if (read.kind !== "ok" || !k.running()) return poll;
  const { record, version } = read.value;
  k.seen(record);
  let peers: StoreOutcome<ReplicaState[]> | undefined;
  let stale = false; // our own record, at an epoch some replica has passed
  if (record !== null && k.isMine(record)) {
    peers = await k.call(() => store.readReplicas(brokerGroup));
    if (peers.kind !== "ok" || !k.running()) return poll;
    const passed = Math.max(
      k.passedEpoch(),
      self?.epoch ?? 0,
      ...peers.value.map((p) => p.epoch),
    );
    if (passed <= record.epoch) return await k.take(record, version, record.epoch);
    // A late write of ours that the KV replayed (see supersede()): elect as if expired.
    stale = true;
    k.setPassedEpoch(passed);
    k.options.log?.("warn", "own lease record at a passed epoch; not taking it back", {
      brokerGroup,
      epoch: record.epoch,
      passedEpoch: passed,
    });
  }
  const live = !stale && record !== null &&
    clock.wallMs() <= record.expiresAtMs + k.settings.leaseSafetyMarginMs;
  if (live || self === undefined) return poll;
  const yieldStale = async () => {
    if (stale && record!.expiresAtMs > 0) await k.expire(record!, version);
    return poll;
  };
  if (!self.inSync && !k.settings.enableElectUncleanMaster) return await yieldStale();
  peers ??= await k.call(() => store.readReplicas(brokerGroup));
  if (peers.kind !== "ok" || !k.running()) return poll;
  const allowed = electionAllows({
    self,
    peers: peers.value,
    recordExists: record !== null,
    nowMs: clock.wallMs(),
    waitedMs: clock.monotonicMs() - k.startedMonotonicMs,
    settings: k.settings,
  });
  if (!allowed) return await yieldStale();
  // Count from every epoch we know of, so a KV that lost the record cannot make an
  // epoch be used twice as long as some replica remembers it.
  const known = Math.max(
    record?.epoch ?? 0,
    self.epoch,
    k.passedEpoch(),
    ...peers.value.map((p) => p.epoch),
  );
  return await k.take(record, version, known + 1);
}
