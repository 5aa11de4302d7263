// The replication gate's answers after a write was appended (runtime/ha/node_gate.ts):
// every one is info-class (504), so neither the SDK (which retries 503s, even for POST) nor
// the cluster router (which sends a "nothing stored" refusal to another group) sends the
// message again. Seen in tests/replication_test.ts ("seq N duplicated but never retried"):
// the master stepped down during the SYNC wait, confirm answered 503 NOT_LEADER "Cannot
// confirm replication (REPLICATION_STOPPED)", the SDK retried, the same broker was master
// again (next epoch) 0.5 s later and stored a second copy, which it acknowledged.
import assert from "node:assert/strict";
import { MqClient } from "../client/mod.ts";
import type { BrokerConfig } from "../runtime/config.ts";
import { isSendElsewhere } from "../runtime/cluster/fault.ts";
import { ResponseCode, responseCodeOf } from "../functions/remoting/codes.ts";
import { notLeaderError, replicationGate } from "../runtime/ha/node_gate.ts";
import type { MasterParts } from "../runtime/ha/node_types.ts";
import { ReplicationError } from "../runtime/ha/replication_errors.ts";
import type { BrokerError } from "../runtime/protocol/errors.ts";

const config = {
  brokerId: 0,
  brokerName: "g1",
  replicationMode: "SYNC",
  inSyncReplicas: 2,
  haSlaveTimeoutMs: 50,
} as unknown as BrokerConfig;

/** A gate over a master whose slave is in sync at checkWritable, then `wait` decides. */
function gate(wait: () => Promise<void>, writable = () => true) {
  const master = { inSyncSlaveCount: () => 1, waitForReplicas: wait };
  const parts = { epoch: 3, master } as unknown as MasterParts;
  return replicationGate(config, () => parts, {
    writable,
    notLeader: (what) => notLeaderError(what, config, null, () => false),
  });
}

/** What the SDK does with `err` as the broker's answer to a produce: how many requests. */
async function sdkAttempts(err: BrokerError): Promise<number> {
  let calls = 0;
  const fetch = (() => {
    calls++;
    return Promise.resolve(
      new Response(JSON.stringify(err.toProblem()), {
        status: err.status,
        headers: { "content-type": "application/problem+json" },
      }),
    );
  }) as typeof globalThis.fetch;
  const client = new MqClient({ baseUrl: "http://127.0.0.1:1", fetch, retryBaseMs: 1 });
  await assert.rejects(client.produce("Orders", { body: "seq-749", queueId: 1 }));
  return calls;
}

/** Writable at checkWritable (before the put), no longer at confirm. */
function leaseEndsAfterCheck() {
  let checks = 0;
  return () => checks++ === 0;
}

const afterWrite: [string, ReturnType<typeof gate>][] = [
  [
    "the slave left the in-sync set during the put",
    gate(() => Promise.reject(new ReplicationError("SLAVE_NOT_AVAILABLE", "0 in sync"))),
  ],
  [
    "the slaves did not confirm in time",
    gate(() => Promise.reject(new ReplicationError("FLUSH_SLAVE_TIMEOUT", "late"))),
  ],
  [
    "the master stopped during the wait",
    gate(() => Promise.reject(new ReplicationError("REPLICATION_STOPPED", "stopped"))),
  ],
  [
    "the master was deposed during the wait",
    gate(() => Promise.reject(new ReplicationError("MASTER_DEPOSED", "epoch 4"))),
  ],
  ["the lease ended during the put", gate(() => Promise.resolve(), leaseEndsAfterCheck())],
];

for (const [what, g] of afterWrite) {
  Deno.test(`replication gate: ${what}: a 504 the SDK and the router do not send again`, async () => {
    g.checkWritable(); // in sync before the put: the record is appended
    const err = await g.confirm(100).then(
      () => assert.fail("confirmed"),
      (e: BrokerError) => e,
    );
    assert.equal(err.code, "REPLICATION_TIMEOUT", err.message);
    assert.equal(err.status, 504);
    assert.match(err.message, /Written on the master but not acknowledged/);
    assert.equal(isSendElsewhere(err), false, "the router would send it to another group");
    assert.equal(await sdkAttempts(err), 1, "the SDK sent the produce again");
  });
}

Deno.test("replication gate: too few slaves before the put: 503, nothing written, safe to retry", async () => {
  const master = { inSyncSlaveCount: () => 0 };
  const g = replicationGate(config, () => ({ master }) as unknown as MasterParts, {
    writable: () => true,
    notLeader: (what) => notLeaderError(what, config, null, () => false),
  });
  const err = (() => {
    try {
      g.checkWritable();
    } catch (e) {
      return e as BrokerError;
    }
    assert.fail("writable");
  })();
  assert.equal(err.code, "REPLICAS_NOT_AVAILABLE");
  assert.equal(err.status, 503);
  assert.equal(isSendElsewhere(err), true);
  assert.equal(await sdkAttempts(err), 4, "a refusal before the put is retried (3 retries)");
});

Deno.test("replication gate: remoting answers a write the slaves left as SLAVE_NOT_AVAILABLE (11), a late one as FLUSH_SLAVE_TIMEOUT (12)", async () => {
  const left = await gate(() => Promise.reject(new ReplicationError("SLAVE_NOT_AVAILABLE", "0")))
    .confirm(100).catch((e: BrokerError) => e);
  const late = await gate(() => Promise.reject(new ReplicationError("FLUSH_SLAVE_TIMEOUT", "t")))
    .confirm(100).catch((e: BrokerError) => e);
  assert.equal(responseCodeOf(left as BrokerError), ResponseCode.SLAVE_NOT_AVAILABLE);
  assert.equal(responseCodeOf(late as BrokerError), ResponseCode.FLUSH_SLAVE_TIMEOUT);
});
