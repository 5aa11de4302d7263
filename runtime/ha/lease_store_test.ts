// The lease and replica-state encodings, and KvLeaseStore over a real KV client (this
// runtime's: Deno.openKv or @deno/kv) talking to a KV Connect host in this process.
import assert from "node:assert/strict";
import process from "node:process";
import { startKvHost } from "../../tools/kv_host/kv_connect_host.ts";
import { pickPlatform } from "../platform/pick.ts";

const platform = await pickPlatform();
import type { ReplicaState } from "./election.ts";
import {
  decodeLeaseRecord,
  decodeReplicaState,
  encodeLeaseRecord,
  encodeReplicaState,
  KvLeaseStore,
  LEASE_PREFIX,
  type LeaseRecord,
  LeaseRecordError,
  REPLICA_PREFIX,
} from "./lease_store.ts";

process.env.DENO_KV_ACCESS_TOKEN ??= "lease-store-test-token";
const TOKEN = process.env.DENO_KV_ACCESS_TOKEN;

const RECORD: LeaseRecord = {
  owner: 2,
  address: "10.0.0.2:8080",
  epoch: 7,
  expiresAtMs: 1_764_547_200_000,
  session: "3f0c",
};
const STATE: ReplicaState = {
  brokerId: 1,
  address: "10.0.0.1:8080",
  epoch: 7,
  maxOffset: 123_456,
  inSync: true,
  priority: 0,
  updatedAtMs: 1_764_547_199_000,
};
const text = (b: Uint8Array) => new TextDecoder().decode(b);

Deno.test("encodeLeaseRecord() writes JSON with the five fields in a fixed order", () => {
  assert.equal(
    text(encodeLeaseRecord({ ...RECORD, extra: 1 } as LeaseRecord)),
    '{"owner":2,"address":"10.0.0.2:8080","epoch":7,"expiresAtMs":1764547200000,"session":"3f0c"}',
  );
  assert.deepEqual(decodeLeaseRecord(encodeLeaseRecord(RECORD)), RECORD);
});

Deno.test("decodeLeaseRecord() refuses what is not a lease record", () => {
  const bad = [
    new Uint8Array([0xff, 0xfe]),
    new TextEncoder().encode("null"),
    new TextEncoder().encode(JSON.stringify({ ...RECORD, epoch: -1 })),
    new TextEncoder().encode(JSON.stringify({ ...RECORD, expiresAtMs: "soon" })),
    new TextEncoder().encode(JSON.stringify({ ...RECORD, session: undefined })),
  ];
  for (const bytes of bad) assert.throws(() => decodeLeaseRecord(bytes), LeaseRecordError);
});

Deno.test("decodeReplicaState() reads what encodeReplicaState() wrote, and nothing else", () => {
  assert.deepEqual(decodeReplicaState(encodeReplicaState(STATE)), STATE);
  const wrong = { ...STATE, inSync: "yes" };
  assert.equal(decodeReplicaState(new TextEncoder().encode(JSON.stringify(wrong))), undefined);
  assert.equal(decodeReplicaState(new Uint8Array([1, 2, 3])), undefined);
});

Deno.test("KvLeaseStore takes and renews only by compare-and-set, never with expireIn", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const kv = await platform.openKv(host.url, { accessToken: TOKEN });
  try {
    const store = new KvLeaseStore(kv);
    assert.deepEqual(await store.readLease("g"), { record: null, version: null });
    const taken = await store.writeLease("g", null, RECORD);
    assert.ok(taken.ok);
    assert.deepEqual(await store.writeLease("g", null, RECORD), { ok: false });
    const renewed = await store.writeLease("g", taken.version, { ...RECORD, expiresAtMs: 1 });
    assert.ok(renewed.ok);
    assert.deepEqual(await store.writeLease("g", taken.version, RECORD), { ok: false }, "stale");
    assert.deepEqual(await store.readLease("g"), {
      record: { ...RECORD, expiresAtMs: 1 },
      version: renewed.version,
    });
    // The stored bytes are our encoding, under the documented key, with no expiry.
    const raw = host.store.get(packedKey([...LEASE_PREFIX, "g"]))!;
    assert.equal(text(raw.data), text(encodeLeaseRecord({ ...RECORD, expiresAtMs: 1 })));
    assert.equal(raw.expireAtMs, 0);

    await kv.set([...LEASE_PREFIX, "bad"], new Uint8Array([1]));
    await assert.rejects(() => store.readLease("bad"), LeaseRecordError);
  } finally {
    kv.close();
  }
});

Deno.test("KvLeaseStore publishes, lists and removes replica states per group", async () => {
  await using host = await startKvHost({ serve: platform.serve, token: TOKEN });
  const kv = await platform.openKv(host.url, { accessToken: TOKEN });
  try {
    const store = new KvLeaseStore(kv);
    await store.publishReplica("g", STATE);
    await store.publishReplica("g", { ...STATE, brokerId: 2, maxOffset: 9 });
    await store.publishReplica("other", { ...STATE, brokerId: 3 });
    await kv.set([...REPLICA_PREFIX, "g", 4], new TextEncoder().encode("junk"));
    await kv.set([...REPLICA_PREFIX, "g", 5], encodeReplicaState(STATE)); // id mismatch
    assert.deepEqual(await store.readReplicas("g"), [STATE, {
      ...STATE,
      brokerId: 2,
      maxOffset: 9,
    }]);
    await store.removeReplica("g", 1);
    assert.deepEqual((await store.readReplicas("g")).map((s) => s.brokerId), [2]);
  } finally {
    kv.close();
  }
});

/** A KV key packed as Deno packs string and integer parts (denokv's key codec). */
function packedKey(parts: (string | number)[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    assert.equal(typeof p, "string");
    out.push(0x02, ...new TextEncoder().encode(p as string), 0x00);
  }
  return new Uint8Array(out);
}
