// The gRPC front end over the cluster router (docs/cluster.md "Front ends in a cluster"):
// startGrpcServer is given a resolver whose broker is a ClusterClient over three in-process
// groups (a Deno KV file as the coordination store). The official RocketMQ 5 Node client's
// Producer spreads messages over the groups; a SimpleConsumer receives and acks each exactly
// once; QueryRoute answers every group's queues, as RocketMQ's proxy does (broker = group).
// A transaction left open is recovered through the producer's Telemetry stream although
// the brokers cannot reach it: the router relays the checks (runtime/cluster/check_relay.ts).
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Producer, SimpleConsumer } from "rocketmq-client-nodejs";
import { withGroups } from "./support/cluster_testing.ts";
import { ClusterTopicAdmin } from "../runtime/cluster/topic_admin.ts";
import { ClusterClient } from "../runtime/cluster/client.ts";
import { CLUSTER } from "./support/cluster_testing.ts";
import { grpcSettingsFromEnv } from "../runtime/protocol/grpc_settings.ts";
import { startGrpcServer } from "../functions/grpc/server.ts";
import { connectRaw, rawCall } from "./support/grpc_raw.ts";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
type View = { messageId: string; body: Buffer };

/** The gRPC front end on a free port over `client`, as split-mode functions start it. */
function frontOver(client: ClusterClient) {
  return startGrpcServer({
    broker: { get: () => Promise.resolve(client), failed() {} },
    apiKeys: [],
    settings: grpcSettingsFromEnv({ PORT: "0", MQ_GRPC_ENABLED: "true" }),
    host: "127.0.0.1",
    log: () => {},
    brokerName: "proxy",
    maxMessageSize: 4 << 20,
    pullWaitMsMax: 3000,
    nowMs: () => Date.now(),
    goawayShield: true,
  });
}

Deno.test("gRPC front end over a ClusterClient of three groups", () =>
  withGroups(["g-a", "g-b", "g-c"], async (g) => {
    await g.register();
    const source = g.source();
    const client = new ClusterClient(source, new ClusterTopicAdmin(source));
    await client.upsertTopic("Spread", { readQueueNums: 2, writeQueueNums: 2 });
    await client.upsertGroup("spread-cg", { consumeFromWhere: "FIRST_OFFSET" });
    const grpc = await frontOver(client);
    const endpoints = `127.0.0.1:${grpc.port}`;
    const producer = new Producer(
      { endpoints, namespace: "", topics: ["Spread"], logger: quiet } as never,
    );
    const consumer = new SimpleConsumer({
      endpoints,
      namespace: "",
      consumerGroup: "spread-cg",
      subscriptions: new Map([["Spread", "*"]]),
      awaitDuration: 1000,
      logger: quiet,
    } as never);
    try {
      // QueryRoute: every group's queues, each group as its own broker, all at this access point.
      const raw = connectRaw(endpoints, undefined);
      try {
        const route = await rawCall(raw, "queryRoute", {
          topic: { name: "Spread" },
          endpoints: { scheme: 1, addresses: [{ host: "127.0.0.1", port: grpc.port }] },
        }) as { messageQueues: { id: number; broker: { name: string } }[] };
        assert.deepEqual(
          route.messageQueues.map((q) => `${q.broker.name}/${q.id}`).sort(),
          ["g-a/0", "g-a/1", "g-b/0", "g-b/1", "g-c/0", "g-c/1"],
        );
        // The offset RPCs name (broker, queue id): g-b's queue 1 is global id 1025.
        await rawCall(raw, "updateOffset", {
          group: { name: "spread-cg" },
          messageQueue: { topic: { name: "Spread" }, id: 1, broker: { name: "g-b" } },
          offset: 0,
        });
        assert.equal((await client.getOffset("spread-cg", "Spread", 1025)).offset, 0);
        assert.equal((await client.getOffset("spread-cg", "Spread", 1)).offset, -1);
      } finally {
        raw.close();
      }

      await producer.startup();
      const sent = new Set<string>();
      for (let i = 0; i < 30; i++) {
        const r = await producer.send({ topic: "Spread", body: Buffer.from(`m${i}`) } as never);
        sent.add((r as { messageId: string }).messageId);
      }
      const perGroup = await Promise.all(
        ["g-a", "g-b", "g-c"].map(async (n) =>
          (await g.brokers.get(n)!.topicStats("Spread")).messages
        ),
      );
      assert.ok(perGroup.every((n) => n > 0), `messages per group: ${perGroup}`);

      await consumer.startup();
      const got: View[] = [];
      const until = Date.now() + 20_000;
      while (got.length < sent.size && Date.now() < until) {
        const batch = (await consumer.receive(16, 2000)) as unknown as View[];
        for (const m of batch) {
          await consumer.ack(m as never);
          got.push(m);
        }
      }
      assert.equal(got.length, sent.size);
      assert.deepEqual(new Set(got.map((m) => m.messageId)), sent);
      // Acked: nothing comes back once the invisible time (2 s) has passed.
      await new Promise((r) => setTimeout(r, 2200));
      assert.deepEqual(await consumer.receive(16, 2000), []);
    } finally {
      await consumer.shutdown().catch(() => {});
      await producer.shutdown().catch(() => {});
      await grpc.close();
    }
  }));

Deno.test({
  name: "gRPC front end over a ClusterClient: an open transaction recovered by the checker",
  fn: () =>
    withGroups(
      ["g-a", "g-b"],
      async (g) => {
        await g.register();
        const source = g.source();
        const client = new ClusterClient(source, new ClusterTopicAdmin(source), {
          clusterCheckRelayWaitMs: 500,
        });
        await client.upsertTopic("TxSpread", { readQueueNums: 1, writeQueueNums: 1 });
        const grpc = await frontOver(client);
        const checked: string[] = [];
        const producer = new Producer({
          endpoints: `127.0.0.1:${grpc.port}`,
          namespace: "",
          topics: ["TxSpread"],
          logger: quiet,
          checker: {
            check: (view: { body: Buffer }) => {
              checked.push(view.body.toString());
              return Promise.resolve(1); // TransactionResolution.COMMIT
            },
          },
        } as never);
        try {
          await producer.startup();
          const ids: string[] = [];
          for (const body of ["open-1", "open-2"]) {
            const tx = producer.beginTransaction();
            const r = await producer.send(
              { topic: "TxSpread", body: Buffer.from(body), keys: [body] } as never,
              tx,
            ) as { transactionId: string };
            ids.push(r.transactionId);
          }
          for (const id of ids) assert.equal((await client.getTransaction(id)).state, "PREPARED");
          // Left open on both: the brokers keep the checks for pollers; the relay polls them
          // and writes them on the producer's Telemetry stream; its checker commits.
          const states = async () =>
            (await Promise.all(ids.map((id) => client.getTransaction(id)))).map((v) => v.state);
          for (const end = Date.now() + 15_000; (await states()).some((s) => s !== "COMMITTED");) {
            assert.ok(Date.now() < end, `not recovered: ${await states()}, checked ${checked}`);
            await new Promise((r) => setTimeout(r, 100));
          }
          assert.deepEqual(checked.sort(), ["open-1", "open-2"]);
        } finally {
          await producer.shutdown().catch(() => {});
          await grpc.close();
          await client.close();
        }
      },
      undefined,
      CLUSTER,
      {
        MQ_TRANSACTION_TIMEOUT_MS: "500",
        MQ_TRANSACTION_CHECK_INTERVAL_MS: "200",
      },
    ),
  sanitizeOps: false,
  sanitizeResources: false,
});
