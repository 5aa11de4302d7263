import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compareCandidates,
  type ElectionOptions,
  electMaster,
  rankCandidates,
  type ReplicaState,
} from "./election.ts";

const NOW = 1_000_000;
const OPTIONS: ElectionOptions = {
  nowMs: NOW,
  replicaStateTtlMs: 10_000,
  enableElectUncleanMaster: false,
};

function replica(brokerId: number, fields: Partial<ReplicaState> = {}): ReplicaState {
  return {
    brokerId,
    address: `127.0.0.1:${10_000 + brokerId}`,
    epoch: 3,
    maxOffset: 1000,
    inSync: true,
    priority: 0,
    updatedAtMs: NOW - 1,
    ...fields,
  };
}

const ids = (states: ReplicaState[]) => states.map((s) => s.brokerId);

Deno.test("electMaster() prefers the higher epoch over a larger offset", () => {
  const states = [
    replica(1, { epoch: 2, maxOffset: 9000 }),
    replica(2, { epoch: 3, maxOffset: 10 }),
  ];
  assert.equal(electMaster(states, OPTIONS)?.brokerId, 2);
});

Deno.test("electMaster() within one epoch prefers the larger maxOffset", () => {
  const states = [replica(1, { maxOffset: 999 }), replica(2, { maxOffset: 1000 })];
  assert.equal(electMaster(states, OPTIONS)?.brokerId, 2);
});

Deno.test("electMaster() breaks offset ties by priority ascending, then brokerId ascending", () => {
  const tied = [
    replica(3, { priority: 1 }),
    replica(2, { priority: 0 }),
    replica(1, { priority: 1 }),
  ];
  assert.deepEqual(ids(rankCandidates(tied, OPTIONS)), [2, 1, 3]);
});

Deno.test("electMaster() ignores out-of-sync replicas unless enableElectUncleanMaster", () => {
  const states = [replica(1, { inSync: false, maxOffset: 5000 }), replica(2, { maxOffset: 10 })];
  assert.equal(electMaster(states, OPTIONS)?.brokerId, 2);
  const lagging = [replica(1, { inSync: false, maxOffset: 5000 })];
  assert.equal(electMaster(lagging, OPTIONS), undefined);
  const unclean = { ...OPTIONS, enableElectUncleanMaster: true };
  assert.equal(electMaster(lagging, unclean)?.brokerId, 1);
  assert.equal(electMaster(states, unclean)?.brokerId, 2, "in-sync still wins when alive");
});

Deno.test("electMaster() ignores states older than replicaStateTtlMs", () => {
  const states = [
    replica(1, { maxOffset: 5000, updatedAtMs: NOW - 10_000 }),
    replica(2, { maxOffset: 10, updatedAtMs: NOW - 9_999 }),
  ];
  assert.equal(electMaster(states, OPTIONS)?.brokerId, 2);
  assert.equal(electMaster([states[0]], OPTIONS), undefined);
});

Deno.test("rankCandidates() counts a broker once, with its freshest state", () => {
  const states = [
    replica(1, { maxOffset: 5000, updatedAtMs: NOW - 5 }),
    replica(1, { maxOffset: 10, updatedAtMs: NOW - 1 }),
    replica(2, { maxOffset: 20 }),
  ];
  const ranked = rankCandidates(states, OPTIONS);
  assert.deepEqual(ids(ranked), [2, 1]);
  assert.equal(ranked[1].maxOffset, 10);
});

Deno.test("compareCandidates() is a strict total order: every permutation elects the same broker", () => {
  const state = fc.record({
    brokerId: fc.integer({ min: 0, max: 7 }),
    epoch: fc.integer({ min: 0, max: 3 }),
    maxOffset: fc.integer({ min: 0, max: 3 }),
    inSync: fc.boolean(),
    priority: fc.integer({ min: 0, max: 2 }),
    updatedAtMs: fc.integer({ min: NOW - 11_000, max: NOW }).map((t) => t - (t % 1000)),
  }).map((s) => replica(s.brokerId, s));
  fc.assert(
    fc.property(fc.array(state, { maxLength: 8 }), fc.boolean(), (states, unclean) => {
      const options = { ...OPTIONS, enableElectUncleanMaster: unclean };
      const winner = electMaster(states, options);
      const reversed = electMaster([...states].reverse(), options);
      assert.equal(winner?.brokerId, reversed?.brokerId);
      const ranked = rankCandidates(states, options);
      for (let i = 1; i < ranked.length; i++) {
        assert.ok(compareCandidates(ranked[i - 1], ranked[i]) < 0);
      }
      // The winner is never beaten by an alive in-sync replica.
      for (const s of ranked) {
        if (winner === undefined) break;
        assert.ok(
          s.epoch < winner.epoch || (s.epoch === winner.epoch && s.maxOffset <= winner.maxOffset),
        );
      }
    }),
    { numRuns: 1000 },
  );
});
