// Transactions over gRPC (issue #23) with real broker processes under Deno and Bun and the
// official RocketMQ 5 Node client: a transaction committed with EndTransaction is delivered
// once; one left open is recovered through the producer's Telemetry stream
// (RecoverOrphanedTransactionCommand), its checker answers COMMIT, and it is delivered.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Producer } from "rocketmq-client-nodejs";
import { TransactionClient } from "../client/transactions.ts";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

const TOPIC = "TxGrpc";
const COMMIT = 1; // TransactionResolution.COMMIT
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const runtime of RUNTIMES) {
  Deno.test({
    name: `transactions over gRPC on ${runtime}: EndTransaction, and recovery by the checker`,
    fn: async () => {
      await using b = await startBroker(runtime, {
        env: { MQ_TRANSACTION_TIMEOUT_MS: "500", MQ_TRANSACTION_CHECK_INTERVAL_MS: "200" },
      });
      await b.client.upsertTopic(TOPIC, { readQueueNums: 2, writeQueueNums: 2 });
      const checked: string[] = [];
      const producer = new Producer({
        endpoints: b.grpc!,
        namespace: "",
        topics: [TOPIC],
        logger: quiet,
        checker: {
          check: (view: { body: Buffer }) => {
            checked.push(view.body.toString());
            return Promise.resolve(COMMIT);
          },
        },
      } as never);
      await producer.startup();
      try {
        const send = (body: string) => {
          const tx = producer.beginTransaction();
          return producer.send({ topic: TOPIC, body: Buffer.from(body), keys: [body] } as never, tx)
            .then((r) => ({ tx, r }));
        };
        const http = new TransactionClient({ baseUrl: b.url });
        const { tx, r } = await send("committed");
        assert.equal((await http.getTransaction(r.transactionId)).state, "PREPARED");
        await tx.commit();
        assert.equal((await http.getTransaction(r.transactionId)).state, "COMMITTED");
        // Left open: the broker asks the producer on its Telemetry stream.
        const orphan = await send("orphan");
        let state = "";
        for (const deadline = performance.now() + 15_000; state !== "COMMITTED";) {
          assert.ok(performance.now() < deadline, `orphan not recovered: ${state}`);
          await sleep(100);
          state = (await http.getTransaction(orphan.r.transactionId)).state;
        }
        assert.deepEqual(checked, ["orphan"]);
        const bodies: string[] = [];
        for (let q = 0; q < 2; q++) {
          for (const m of (await b.client.pull(TOPIC, q, { offset: 0 })).messages) {
            bodies.push(m.body);
          }
        }
        assert.deepEqual(bodies.sort(), ["committed", "orphan"]);
      } finally {
        await producer.shutdown();
      }
      await b.stop(); // graceful, as tests/grpc_test.ts: Telemetry streams end with a status
    },
    sanitizeOps: false,
    sanitizeResources: false,
  });
}
