// The cluster router's consume side over three real in-process brokers: POP fairness and
// receipt-handle routing, long polls across groups, assignment over the global queue list,
// offsets merged, locks, broadcast group settings and merged views.
import assert from "node:assert/strict";
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "./client.ts";
import { BrokerError } from "../protocol/errors.ts";
import { unwrapToken } from "./handles.ts";

const body = new TextEncoder().encode("m");
const noTopics = {} as ClusterTopicAdminPort;
const isCode = (code: string) => (err: unknown) => err instanceof BrokerError && err.code === code;
const ids = [0, 1024, 2048];

Deno.test("ClusterClient consume: POP fairness, handles, assignment, offsets, locks, views", async (t) => {
  await withCluster(3, async (groups, routes) => {
    const client = new ClusterClient(routes, noTopics, { clusterPopPollSliceMs: 50 });
    await routes.createTopic("p", 1);
    await client.upsertGroup("cg", { consumeFromWhere: "FIRST_OFFSET" });
    for (const g of groups) assert.equal((await g.broker.getGroup("cg")).group, "cg");

    await t.step("POP rotates its first group per call: no group starves", async () => {
      for (const q of ids) {
        for (let i = 0; i < 10; i++) await client.produce("p", { body, queueId: q });
      }
      const firsts = new Set<number>();
      const seen = new Set<number>();
      for (let i = 0; i < 6; i++) {
        const got = await client.receive("cg", { topic: "p", max: 2 });
        assert.equal(got.length, 2);
        firsts.add(got[0].queueId);
        for (const m of got) seen.add(m.queueId);
        await client.ackBatch("cg", got.map((m) => m.receiptHandle));
      }
      assert.deepEqual([...firsts].sort((a, b) => a - b), ids);
      // max spans groups: 30 messages, 18 left, 3 × 6 per group.
      const rest = await client.receive("cg", { topic: "p", max: 32 });
      assert.equal(rest.length, 18);
      assert.deepEqual([...new Set(rest.map((m) => m.queueId))].sort((a, b) => a - b), ids);
      const results = await client.ackBatch("cg", [
        rest[0].receiptHandle,
        "garbage",
        rest[1].receiptHandle,
        rest[0].receiptHandle,
      ]);
      assert.deepEqual(results.map((r) => r.ok), [true, false, true, false]);
      assert.equal(results[1].receiptHandle, "garbage");
      assert.ok(!results[1].ok && results[1].error.code === "RECEIPT_HANDLE_UNKNOWN");
      assert.ok(!results[3].ok && results[3].error.code === "RECEIPT_HANDLE_SETTLED");
      await assert.rejects(client.ack("cg", "@@@.x"), isCode("RECEIPT_HANDLE_UNKNOWN"));
      await assert.rejects(client.ack("cg", "plain-handle"), isCode("RECEIPT_HANDLE_UNKNOWN"));
      const m = rest[2];
      assert.equal(unwrapToken(m.receiptHandle)?.group, ["g-a", "g-b", "g-c"][m.queueId / 1024]);
      await client.changeInvisibleTime("cg", m.receiptHandle, 60_000);
      await client.nack("cg", rest[3].receiptHandle);
      for (const x of rest.slice(4)) await client.ack("cg", x.receiptHandle);
      await client.ack("cg", m.receiptHandle);
    });

    await t.step("a long poll sees a message that arrives on any group", async () => {
      const started = Date.now();
      const waiting = client.receive("cg", { topic: "p", max: 1, waitMs: 3000 });
      await new Promise((r) => setTimeout(r, 150));
      await client.produce("p", { body, queueId: 2048 });
      const got = await waiting;
      assert.equal(got.length, 1);
      assert.equal(got[0].queueId, 2048);
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
      await client.ack("cg", got[0].receiptHandle);
      const aborted = new AbortController();
      setTimeout(() => aborted.abort(), 100);
      const empty = await client.receive("cg", { topic: "p", waitMs: 3000 }, aborted.signal);
      assert.equal(empty.length, 0);
    });

    await t.step(
      "assignment is over the global queue list: 3 groups × 1 queue, 3 consumers",
      async () => {
        await client.upsertGroup("rb", {});
        for (const c of ["c1", "c2", "c3"]) {
          const members = await client.heartbeat("rb", {
            clientId: c,
            subscriptions: [{ topic: "p" }],
          });
          assert.ok(members.members.includes(c));
        }
        for (const g of groups) {
          assert.deepEqual(
            (await g.broker.heartbeat("rb", { clientId: "c1", subscriptions: [{ topic: "p" }] }))
              .members,
            ["c1", "c2", "c3"],
          );
        }
        const shares = [];
        for (const c of ["c1", "c2", "c3"]) {
          shares.push((await client.assignment("rb", c, "p")).queueIds);
        }
        assert.deepEqual(shares.map((s) => s.length), [1, 1, 1]);
        assert.deepEqual(shares.flat().sort((a, b) => a - b), ids);
        // Locks go to the owning groups and answer global ids.
        assert.deepEqual(await client.lockQueues("rb", "c1", "p", [2048, 0]), [0, 2048]);
        assert.deepEqual(await client.lockQueues("rb", "c2", "p", [0, 1024]), [1024]);
        await client.lockQueues("rb", "c1", "p", [0, 2048], true);
        assert.deepEqual(await client.lockQueues("rb", "c2", "p", [0]), [0]);
        await client.unregister("rb", "c3");
        const two = await Promise.all(["c1", "c2"].map((c) => client.assignment("rb", c, "p")));
        assert.deepEqual(two.flatMap((a) => a.queueIds).sort((a, b) => a - b), ids);
      },
    );

    await t.step("offsets go to the owning group and merge over groups", async () => {
      await client.upsertGroup("off", {});
      for (const q of ids) await client.produce("p", { body, queueId: q });
      const one = await client.commitOffset("off", "p", 1024, 2);
      assert.equal(one.queueId, 1024);
      assert.equal((await client.getOffset("off", "p", 1024)).offset, 2);
      assert.equal((await groups[1].broker.getOffset("off", "p", 0)).offset, 2);
      const merged = await client.getOffsets("off", "p");
      assert.deepEqual(merged.queues.map((q) => q.queueId), ids);
      assert.equal(merged.totalLag, merged.queues.reduce((n, q) => n + q.lag, 0));
      const local = await Promise.all(groups.map((g) => g.broker.getOffsets("off", "p")));
      assert.equal(merged.totalLag, local.reduce((n, o) => n + o.totalLag, 0));
      const reset = await client.resetOffsetsByTime("off", "p", 0);
      assert.deepEqual(reset.queues.map((q) => q.queueId), ids);
      await assert.rejects(client.commitOffset("off", "p", 4096, 0), isCode("QUEUE_NOT_FOUND"));
      await assert.rejects(client.getOffsets("off", "nope"), isCode("TOPIC_NOT_FOUND"));
    });

    await t.step("views aggregate every group", async () => {
      const stats = await client.topicStats("p");
      assert.deepEqual(stats.queues.map((q) => q.queueId), ids);
      const health = await client.health();
      assert.equal(health.brokerName, "g-a,g-b,g-c");
      const cluster = await client.clusterView();
      assert.equal(cluster.nodes.length, 3);
      const progress = await client.groupProgress("off");
      assert.deepEqual(
        progress.topics.find((x) => x.topic === "p")?.queues.map((q) => q.queueId),
        ids,
      );
      assert.equal((await client.getGroup("cg")).consumeFromWhere, "FIRST_OFFSET");
    });
  });
});
