// The lease keeper's settings, and the decision a candidate makes once the lease has
// expired: may it take the lease? Pure, so both are tested without a store or a clock.
import { isAlive, rankCandidates, type ReplicaState } from "./election.ts";

export interface LeaseSettings {
  /** How long a take or renew holds, ms. Default 10 s. */
  leaseTtlMs: number;
  /**
   * Subtracted by the holder (it steps down this long before its record expires) and
   * added by candidates (they wait this long after it expires), ms. Covers wall-clock
   * skew between brokers and the holder's reaction time. Default 2 s.
   */
  leaseSafetyMarginMs: number;
  /** The holder renews this often, ms. Default leaseTtlMs / 3. */
  leaseRenewIntervalMs: number;
  /** Candidates read the lease this often; also the retry delay after a failed call, ms.
   * Default leaseTtlMs / 10 (1 s). */
  leasePollIntervalMs: number;
  /** A store call (or eligibility()) not answered by then is given up on, ms. Default
   * leaseTtlMs / 5. */
  leaseStoreCallTimeoutMs: number;
  /** Store calls pending at once (timed-out ones included); more are not made. Default 8. */
  storeCallsInFlightMax: number;
  /** A published replica state older than this is a dead broker's, ms. Default leaseTtlMs. */
  replicaStateTtlMs: number;
  /** brokerElectionPriority: lower wins ties of epoch and offset. Default 0. */
  brokerElectionPriority: number;
  /** Takes a brand-new group (no record) at once and wins its ties; null: none. */
  preferredBrokerId: number | null;
  /** Others leave a brand-new group this long to a preferred broker not yet seen, ms.
   * Default leaseTtlMs. */
  newGroupGraceMs: number;
  /** Let an out-of-sync replica become master when no in-sync one is alive (loses
   * acknowledged messages). Default false, as RocketMQ's enableElectUncleanMaster. */
  enableElectUncleanMaster: boolean;
}

export const LEASE_TTL_MS_DEFAULT = 10_000;
export const LEASE_SAFETY_MARGIN_MS_DEFAULT = 2_000;
export const STORE_CALLS_IN_FLIGHT_MAX_DEFAULT = 8;

/** Settings that cannot give a safe or live lease. */
export class LeaseConfigError extends Error {
  override name = "LeaseConfigError";
}

/** Fills defaults and checks that the settings can work together. */
export function leaseSettings(partial: Partial<LeaseSettings> = {}): LeaseSettings {
  const ttl = partial.leaseTtlMs ?? LEASE_TTL_MS_DEFAULT;
  const s: LeaseSettings = {
    leaseTtlMs: ttl,
    leaseSafetyMarginMs: LEASE_SAFETY_MARGIN_MS_DEFAULT,
    leaseRenewIntervalMs: Math.floor(ttl / 3),
    leasePollIntervalMs: Math.floor(ttl / 10),
    leaseStoreCallTimeoutMs: Math.floor(ttl / 5),
    storeCallsInFlightMax: STORE_CALLS_IN_FLIGHT_MAX_DEFAULT,
    replicaStateTtlMs: ttl,
    brokerElectionPriority: 0,
    preferredBrokerId: null,
    newGroupGraceMs: ttl,
    enableElectUncleanMaster: false,
    ...partial,
  };
  const need = (ok: boolean, what: string) => {
    if (!ok) throw new LeaseConfigError(`Cannot use these lease settings: ${what}`);
  };
  for (const name of ["leaseTtlMs", "leaseRenewIntervalMs", "leasePollIntervalMs"] as const) {
    need(Number.isSafeInteger(s[name]) && s[name] > 0, `${name} must be > 0, is ${s[name]}`);
  }
  need(
    Number.isSafeInteger(s.leaseSafetyMarginMs) && s.leaseSafetyMarginMs >= 0,
    `leaseSafetyMarginMs must be >= 0, is ${s.leaseSafetyMarginMs}`,
  );
  // The holder must be able to start a renew and see it time out before its deadline,
  // or one slow call costs the lease.
  need(
    s.leaseRenewIntervalMs + s.leaseStoreCallTimeoutMs < s.leaseTtlMs - s.leaseSafetyMarginMs,
    `leaseRenewIntervalMs + leaseStoreCallTimeoutMs must be below leaseTtlMs - ` +
      `leaseSafetyMarginMs: ${s.leaseRenewIntervalMs} + ${s.leaseStoreCallTimeoutMs} >= ` +
      `${s.leaseTtlMs} - ${s.leaseSafetyMarginMs}`,
  );
  need(s.leaseStoreCallTimeoutMs > 0, `leaseStoreCallTimeoutMs must be > 0`);
  need(s.storeCallsInFlightMax >= 1, `storeCallsInFlightMax must be >= 1`);
  // Published states must be refreshed before they count as dead.
  need(
    s.replicaStateTtlMs > Math.max(s.leasePollIntervalMs, s.leaseRenewIntervalMs),
    `replicaStateTtlMs (${s.replicaStateTtlMs}) must exceed the poll and renew intervals`,
  );
  need(s.newGroupGraceMs >= 0, `newGroupGraceMs must be >= 0`);
  return s;
}

/**
 * May `self` take an expired (or absent) lease? Only if the election rule, run over
 * the alive peers' published states and this broker's fresh one, names it. The take is
 * still a CAS: two brokers with different views can both be allowed, only one wins.
 */
export function electionAllows(input: {
  self: ReplicaState;
  peers: readonly ReplicaState[];
  /** False for a brand-new group (or a KV that lost the record). */
  recordExists: boolean;
  /** Wall clock, ms since 1970. */
  nowMs: number;
  /** Monotonic time since this keeper started, ms. */
  waitedMs: number;
  settings: LeaseSettings;
}): boolean {
  const { self, settings } = input;
  const preferred = input.recordExists ? null : settings.preferredBrokerId;
  const others = input.peers.filter((p) => p.brokerId !== self.brokerId);
  if (preferred !== null && preferred !== self.brokerId) {
    const seen = others.some((p) =>
      p.brokerId === preferred && isAlive(p, input.nowMs, settings.replicaStateTtlMs)
    );
    if (!seen && input.waitedMs < settings.newGroupGraceMs) return false;
  }
  // The preferred broker of a new group wins ties of epoch and offset, but never beats a
  // replica with newer data (a KV that lost the record is not a new group to them).
  const boost = (s: ReplicaState) =>
    s.brokerId === preferred ? { ...s, priority: Number.MIN_SAFE_INTEGER } : s;
  const ranked = rankCandidates([...others, self].map(boost), {
    nowMs: input.nowMs,
    replicaStateTtlMs: settings.replicaStateTtlMs,
    enableElectUncleanMaster: settings.enableElectUncleanMaster,
  });
  return ranked[0]?.brokerId === self.brokerId;
}
