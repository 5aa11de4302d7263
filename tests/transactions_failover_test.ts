// Transactions across a failover (issue #23): a SYNC-replicated group of three real brokers
// under Deno and Bun. A transaction left undecided is checked on the master, the master is
// killed (SIGKILL), and the new master resumes checking from the replicated log: the check
// count goes on from where it was, the producer's answer (by long poll) commits it, and
// every message is delivered once.
import assert from "node:assert/strict";
import { MqClient } from "../client/mod.ts";
import { runTransactionChecks, TransactionClient } from "../client/transactions.ts";
import { startFunctions } from "./harness/broker.ts";
import { Cluster, KV_TOKEN } from "./harness/cluster.ts";
import { RUNTIMES } from "./harness/process.ts";
import type { WireMessage } from "../runtime/protocol/types.ts";

const ENV = {
  MQ_LEASE_TTL_MS: "1500",
  MQ_LEASE_MARGIN_MS: "300",
  MQ_REPLICATION_MODE: "SYNC",
  MQ_IN_SYNC_REPLICAS: "2",
  MQ_FLUSH_DISK_TYPE: "SYNC_FLUSH",
  MQ_HA_HEARTBEAT_MS: "200",
  MQ_HA_HOUSEKEEPING_MS: "2000",
  MQ_HA_SLAVE_TIMEOUT_MS: "2000",
  MQ_HA_METADATA_SYNC_MS: "300",
  MQ_SEGMENT_BYTES: String(4 * 1024 * 1024),
  MQ_TRANSACTION_TIMEOUT_MS: "300",
  MQ_TRANSACTION_CHECK_INTERVAL_MS: "200",
  MQ_TRANSACTION_CHECK_MAX: "100",
  MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
};
const TOPIC = "Orders";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readTopic(mq: MqClient): Promise<WireMessage[]> {
  const out: WireMessage[] = [];
  for (let q = 0; q < 4; q++) out.push(...(await mq.pull(TOPIC, q, { offset: 0 })).messages);
  return out;
}

for (const runtime of RUNTIMES) {
  Deno.test(`transactions on ${runtime}: SYNC failover mid-transaction, the new master keeps checking`, async () => {
    await using cluster = new Cluster(runtime, 3, ENV);
    await cluster.startKv();
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    const master = await cluster.waitForMaster(2);
    const url = cluster.replicas[master].proc!.url;
    const mq = new MqClient({ baseUrl: url });
    const tx = new TransactionClient({ baseUrl: url });
    await mq.upsertTopic(TOPIC, { readQueueNums: 4, writeQueueNums: 4 });
    // Functions in front of the group (split mode): they follow the master after the kill.
    await using functions = await startFunctions(runtime, {
      kvUrl: cluster.kvUrl,
      kvToken: KV_TOKEN,
    });
    const viaFunctions = new TransactionClient({ baseUrl: functions.url });
    const decided = await viaFunctions.beginTransaction(TOPIC, { body: "decided" }, "shop");
    await viaFunctions.commit(decided.transactionId);
    // A check URL is in the log too: the new master has it.
    const hook = await tx.setTransactionCheck("hooked", { url: "http://127.0.0.1:9/check" });
    const orphan = await tx.beginTransaction(TOPIC, { body: "orphan" }, "shop");
    // Checked at least twice on the first master (nobody answers yet).
    let before = 0;
    for (const deadline = performance.now() + 10_000; before < 2;) {
      assert.ok(performance.now() < deadline, "the first master never checked");
      before = (await tx.getTransaction(orphan.transactionId)).checks;
      await sleep(50);
    }
    await sleep(600); // a metadata copy or two (topic config) reaches the slaves
    await cluster.kill(master);
    const next = await cluster.waitForMaster(1, 30_000, master);
    const url2 = cluster.replicas[next].proc!.url;
    const tx2 = new TransactionClient({ baseUrl: url2 });
    const stop = new AbortController();
    // The producer long-polls through the functions, which find the new master.
    const loop = runTransactionChecks(viaFunctions, "shop", () => "COMMIT", {
      signal: stop.signal,
      waitMs: 1000,
    });
    let view = await tx2.getTransaction(orphan.transactionId);
    for (const deadline = performance.now() + 15_000; view.state !== "COMMITTED";) {
      assert.ok(performance.now() < deadline, `not committed on the new master: ${view.state}`);
      assert.notEqual(view.state, "DISCARDED");
      await sleep(50);
      view = await tx2.getTransaction(orphan.transactionId);
    }
    stop.abort();
    await loop;
    assert.ok(view.checks > before, `check count restarted: ${view.checks} <= ${before}`);
    assert.equal((await viaFunctions.getTransaction(decided.transactionId)).state, "COMMITTED");
    const kept = await tx2.getTransactionCheck("hooked");
    assert.equal(kept.url, hook.url);
    assert.equal(kept.secrets[0].slice(0, 10), hook.secrets[0].slice(0, 10));
    const bodies = (await readTopic(new MqClient({ baseUrl: url2 }))).map((m) => m.body).sort();
    assert.deepEqual(bodies, ["decided", "orphan"]);
  });
}
