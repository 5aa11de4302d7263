// The cluster router's produce side over three real in-process brokers: global queue ids,
// order per sharding key, fault skip and retry, batch split, scheduled-message routing,
// find by id and transactions.
import assert from "node:assert/strict";
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "./client.ts";
import { BrokerError } from "../protocol/errors.ts";
import { javaStringHashCode } from "../../storage/message/record.ts";
import { unwrapToken } from "./handles.ts";

const body = new TextEncoder().encode("m");
const noTopics = {} as ClusterTopicAdminPort;
const isCode = (code: string) => (err: unknown) => err instanceof BrokerError && err.code === code;

Deno.test("ClusterClient produce: global ids, sharding keys, faults, batches, lookups, transactions", async (t) => {
  await withCluster(3, async (groups, routes, failing) => {
    let now = 1_000_000;
    const client = new ClusterClient(routes, noTopics, { nowMs: () => now });
    await routes.createTopic("t", 2);
    const all = [0, 1, 1024, 1025, 2048, 2049];

    await t.step("round robin spreads over every group's queues, with global ids", async () => {
      const ids = [];
      for (let i = 0; i < 12; i++) ids.push((await client.produce("t", { body })).queueId);
      assert.deepEqual([...new Set(ids)].sort((a, b) => a - b), all);
      for (const q of all) assert.equal(ids.filter((id) => id === q).length, 2);
      const r = await client.produce("t", { body, queueId: 1025 });
      assert.equal(r.queueId, 1025);
      const pulled = await client.pull("t", 1025, { offset: r.queueOffset });
      assert.equal(pulled.messages[0].messageId, r.messageId);
      assert.equal(pulled.messages[0].queueId, 1025);
      const own = await groups[1].broker.pull("t", 1, { offset: r.queueOffset });
      assert.equal(own.messages[0].messageId, r.messageId);
    });

    await t.step("an unknown queue re-reads the route once, then is QUEUE_NOT_FOUND", async () => {
      routes.invalidated.length = 0;
      await assert.rejects(client.produce("t", { body, queueId: 3072 }), isCode("QUEUE_NOT_FOUND"));
      await assert.rejects(client.pull("t", 5000, { offset: 0 }), isCode("QUEUE_NOT_FOUND"));
      assert.deepEqual(routes.invalidated, ["t", "t"]);
    });

    await t.step("a sharding key hashes over the global writable list", async () => {
      for (const key of ["order-1", "order-2", "order-3", "x"]) {
        const expected = all[Math.abs(javaStringHashCode(key) % all.length)];
        for (let i = 0; i < 3; i++) {
          assert.equal((await client.produce("t", { body, shardingKey: key })).queueId, expected);
        }
      }
    });

    await t.step(
      "a failed group is skipped for the backoff and a send is retried elsewhere",
      async () => {
        failing.add("g-b");
        routes.invalidated.length = 0;
        const ids = [];
        for (let i = 0; i < 9; i++) ids.push((await client.produce("t", { body })).queueId);
        assert.ok(ids.every((q) => q < 1024 || q >= 2048), `no g-b queue: ${ids}`);
        assert.ok(routes.invalidated.includes("t"));
        const callsBefore = groups[1].calls.get("produce");
        failing.delete("g-b");
        for (let i = 0; i < 6; i++) await client.produce("t", { body });
        assert.equal(groups[1].calls.get("produce"), callsBefore, "g-b in backoff: not asked");
        now += 10_001;
        const after = [];
        for (let i = 0; i < 6; i++) after.push((await client.produce("t", { body })).queueId);
        assert.ok(after.some((q) => q >= 1024 && q < 2048), "g-b back after the backoff");
        // A keyed message is never moved to another group: the order per key would break.
        const key = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"].find((k) =>
          [1024, 1025].includes(all[Math.abs(javaStringHashCode(k) % all.length)])
        )!;
        failing.add("g-b");
        await assert.rejects(
          client.produce("t", { body, shardingKey: key }),
          isCode("BROKER_UNAVAILABLE"),
        );
        failing.delete("g-b");
        now += 10_001;
      },
    );

    await t.step("a batch is split per group and answered per item in order", async () => {
      const items = [
        { body, queueId: 2049 },
        { body },
        { body, queueId: 9999 },
        { body, shardingKey: "order-1" },
        { body, queueId: 0 },
      ];
      const results = await client.produceBatch("t", items);
      assert.equal(results.length, 5);
      assert.ok(results[0].ok && results[0].queueId === 2049);
      assert.ok(results[1].ok);
      assert.ok(
        !results[2].ok && results[2].index === 2 && results[2].error.code === "QUEUE_NOT_FOUND",
      );
      const keyed = all[Math.abs(javaStringHashCode("order-1") % all.length)];
      assert.ok(results[3].ok && results[3].queueId === keyed);
      assert.ok(results[4].ok && results[4].queueId === 0);
      // A group failing mid-batch: its unkeyed items go elsewhere, keyed and explicit fail.
      failing.add("g-c");
      const again = await client.produceBatch("t", [{ body }, { body, queueId: 2048 }, { body }, {
        body,
      }]);
      failing.delete("g-c");
      now += 10_001;
      assert.ok(
        !again[1].ok && again[1].index === 1 && again[1].error.code === "BROKER_UNAVAILABLE",
      );
      for (const i of [0, 2, 3]) assert.ok(again[i].ok && again[i].queueId < 2048, `item ${i}`);
    });

    await t.step("find by id asks the group whose prefix matches; key search merges", async () => {
      const r = await client.produce("t", { body, queueId: 2048, keys: ["find-me"] });
      await client.produce("t", { body, queueId: 0, keys: ["find-me"] });
      for (const g of groups) g.calls.clear();
      const m = await client.getMessageById(r.messageId);
      assert.equal(m.queueId, 2048);
      assert.equal(groups[0].calls.get("getMessageById"), undefined);
      assert.equal(groups[2].calls.get("getMessageById"), 1);
      await assert.rejects(client.getMessageById("00".repeat(16)), isCode("MESSAGE_NOT_FOUND"));
      const found = await client.findMessages("t", { key: "find-me" });
      assert.deepEqual(found.map((x) => x.queueId).sort((a, b) => a - b), [0, 2048]);
    });

    await t.step("scheduled messages are cancelled where they live", async () => {
      const r = await client.produce("t", {
        body,
        queueId: 1024,
        delayMs: 60_000,
        keys: ["later"],
      });
      assert.equal(r.queueId, 1024);
      assert.equal((await client.cancelScheduled("t", r.messageId)).status, "CANCELLED");
      await assert.rejects(
        client.cancelScheduled("t", r.messageId),
        (e) => e instanceof BrokerError,
      );
      await client.produce("t", { body, queueId: 0, delayMs: 60_000, keys: ["k"] });
      await client.produce("t", { body, queueId: 2048, delayMs: 60_000, keys: ["k"] });
      assert.equal((await client.cancelScheduledByKey("t", "k")).length, 2);
    });

    await t.step(
      "a transaction id names its group; commit delivers on the global queue",
      async () => {
        const begun = await client.beginTransaction("t", { body, queueId: 1025 }, "producers");
        assert.equal(unwrapToken(begun.transactionId)?.group, "g-b");
        assert.equal(begun.queueId, 1025);
        const view = await client.endTransaction(begun.transactionId, "COMMIT");
        assert.equal(view.state, "COMMITTED");
        assert.equal(view.queueId, 1025);
        assert.equal(view.transactionId, begun.transactionId);
        assert.equal((await client.getTransaction(begun.transactionId)).state, "COMMITTED");
        const delivered = await client.getMessageById(begun.messageId, "t");
        assert.equal(delivered.queueId, 1025);
        assert.equal(delivered.topic, "t");
        await assert.rejects(
          client.getTransaction("not-a-wrapped-id"),
          isCode("TRANSACTION_NOT_FOUND"),
        );
        const check = await client.setTransactionCheck("producers", {
          url: "https://example.com/check",
        });
        assert.equal(check.producerGroup, "producers");
      },
    );
  });
});
