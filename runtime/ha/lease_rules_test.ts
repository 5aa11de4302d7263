import assert from "node:assert/strict";
import type { ReplicaState } from "./election.ts";
import { electionAllows, LeaseConfigError, leaseSettings } from "./lease_rules.ts";

Deno.test("leaseSettings() documents its defaults: TTL 10 s, margin 2 s, renew TTL/3, poll TTL/10", () => {
  assert.deepEqual(leaseSettings(), {
    leaseTtlMs: 10_000,
    leaseSafetyMarginMs: 2_000,
    leaseRenewIntervalMs: 3_333,
    leasePollIntervalMs: 1_000,
    leaseStoreCallTimeoutMs: 2_000,
    storeCallsInFlightMax: 8,
    replicaStateTtlMs: 10_000,
    brokerElectionPriority: 0,
    preferredBrokerId: null,
    newGroupGraceMs: 10_000,
    enableElectUncleanMaster: false,
  });
  const short = leaseSettings({ leaseTtlMs: 1000, leaseSafetyMarginMs: 200 });
  assert.equal(short.leaseRenewIntervalMs, 333);
  assert.equal(short.leaseStoreCallTimeoutMs, 200);
  assert.equal(short.leasePollIntervalMs, 100);
});

Deno.test("leaseSettings() refuses settings that cannot keep a lease", () => {
  const refused = (partial: Parameters<typeof leaseSettings>[0], text: RegExp) =>
    assert.throws(() => leaseSettings(partial), (e: Error) => {
      assert.ok(e instanceof LeaseConfigError);
      assert.match(e.message, text);
      return true;
    });
  refused({ leaseTtlMs: 0 }, /leaseTtlMs must be > 0, is 0/);
  refused({ leaseSafetyMarginMs: -1 }, /leaseSafetyMarginMs must be >= 0/);
  // 3333 + 2000 >= 10000 - 5000: a renew could not time out before the deadline.
  refused({ leaseSafetyMarginMs: 5_000 }, /3333 \+ 2000 >= 10000 - 5000/);
  refused({ leaseRenewIntervalMs: 9_000 }, /must be below leaseTtlMs - leaseSafetyMarginMs/);
  refused({ replicaStateTtlMs: 3_000 }, /replicaStateTtlMs \(3000\) must exceed/);
  refused({ storeCallsInFlightMax: 0 }, /storeCallsInFlightMax must be >= 1/);
});

const NOW = 5_000_000;
const state = (brokerId: number, fields: Partial<ReplicaState> = {}): ReplicaState => ({
  brokerId,
  address: `b${brokerId}`,
  epoch: 4,
  maxOffset: 100,
  inSync: true,
  priority: 0,
  updatedAtMs: NOW - 10,
  ...fields,
});
const allows = (
  self: ReplicaState,
  peers: ReplicaState[],
  options: { recordExists?: boolean; waitedMs?: number; preferredBrokerId?: number } = {},
) =>
  electionAllows({
    self,
    peers,
    recordExists: options.recordExists ?? true,
    nowMs: NOW,
    waitedMs: options.waitedMs ?? 0,
    settings: leaseSettings({ preferredBrokerId: options.preferredBrokerId ?? null }),
  });

Deno.test("electionAllows() lets a candidate take only when it ranks first among alive peers", () => {
  assert.equal(allows(state(2), [state(1, { maxOffset: 101 })]), false);
  assert.equal(allows(state(2), [state(1, { maxOffset: 101, inSync: false })]), true);
  assert.equal(allows(state(2), [state(1, { maxOffset: 101, updatedAtMs: NOW - 10_000 })]), true);
  assert.equal(allows(state(2), [state(1)]), false, "ties go to the lower brokerId");
  assert.equal(allows(state(1), [state(2)]), true);
  assert.equal(allows(state(2), [state(2, { maxOffset: 999 }), state(1, { maxOffset: 1 })]), true);
  assert.equal(allows(state(2, { inSync: false }), []), false);
});

Deno.test("electionAllows() gives a brand-new group to the preferred broker, never over newer data", () => {
  const p = { recordExists: false, preferredBrokerId: 3 };
  assert.equal(allows(state(3), [state(1), state(2)], p), true, "it wins the ties");
  assert.equal(allows(state(1), [state(3)], p), false);
  assert.equal(allows(state(1), [], p), false, "others wait for it a while");
  assert.equal(allows(state(1), [], { ...p, waitedMs: 10_000 }), true, "not forever");
  assert.equal(allows(state(3), [state(1, { maxOffset: 101 })], p), false);
  assert.equal(allows(state(1), [state(3)], { ...p, recordExists: true }), true);
});
