// The cluster router's admin side and route changes over three real in-process brokers:
// webhook subscriptions with one secret, cron schedules on one home group, DLQ fan-out,
// transaction checks polled across groups, a topic on two of three groups, a draining
// group, a group that went away.
import assert from "node:assert/strict";
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "./client.ts";
import { BrokerError } from "../protocol/errors.ts";
import { unwrapToken } from "./handles.ts";

const body = new TextEncoder().encode("m");
const noTopics = {} as ClusterTopicAdminPort;
const isCode = (code: string) => (err: unknown) => err instanceof BrokerError && err.code === code;

Deno.test("ClusterClient admin: subscriptions, schedules, DLQ, transaction checks, route changes", async (t) => {
  await withCluster(3, async (groups, routes) => {
    const client = new ClusterClient(routes, noTopics, { clusterPopPollSliceMs: 50 });
    await routes.createTopic("w", 1);
    await client.upsertGroup("hooks", {});

    await t.step(
      "a webhook subscription is on every group of its topic, with one secret",
      async () => {
        const view = await client.upsertSubscription("hooks", {
          topic: "w",
          url: "https://example.invalid/hook",
        });
        const own = await Promise.all(groups.map((g) => g.broker.getSubscription("hooks")));
        assert.equal(own.length, 3);
        assert.equal(view.secrets.length, 1);
        assert.ok(view.secrets[0].startsWith("whsec_"));
        const paused = await client.setSubscriptionPaused("hooks", true);
        assert.equal(paused.status, "paused");
        for (const g of groups) {
          assert.equal((await g.broker.getSubscription("hooks")).status, "paused");
        }
        assert.deepEqual(
          (await client.listSubscriptions()).map((s) => s.group),
          ["hooks"],
        );
        await client.deleteSubscription("hooks");
        await assert.rejects(client.getSubscription("hooks"), isCode("SUBSCRIPTION_NOT_FOUND"));
      },
    );

    await t.step("a cron schedule lives on one home group and is found from any", async () => {
      const s = await client.createSchedule({ topic: "w", cron: "0 0 1 1 *", message: { body } });
      assert.equal((await groups[0].broker.listSchedules()).length, 1);
      assert.equal((await groups[1].broker.listSchedules()).length, 0);
      assert.equal((await client.getSchedule(s.id)).id, s.id);
      assert.equal((await client.setSchedulePaused(s.id, true)).paused, true);
      assert.deepEqual((await client.listSchedules()).map((x) => x.id), [s.id]);
      await client.deleteSchedule(s.id);
      await assert.rejects(client.getSchedule(s.id), isCode("SCHEDULE_NOT_FOUND"));
    });

    await t.step("DLQ calls fan out and add up", async () => {
      const page = await client.listDlq("hooks");
      assert.equal(page.messages.length, 0);
      assert.deepEqual(await client.purgeDlq("hooks"), { purged: 0 });
      assert.deepEqual(await client.redriveDlq("hooks"), { redriven: 0 });
    });

    await t.step(
      "transaction checks are polled across groups; the id names the group",
      async () => {
        const begun = await client.beginTransaction("w", { body, queueId: 1024 }, "txp");
        const checks = await client.pollTransactionChecks("txp", { waitMs: 5000 });
        assert.equal(checks.length, 1);
        assert.equal(checks[0].transactionId, begun.transactionId);
        assert.equal(unwrapToken(checks[0].transactionId)?.group, "g-b");
        assert.equal(checks[0].queueId, 1024);
        const view = await client.endTransaction(checks[0].transactionId, "ROLLBACK", {
          fromCheck: true,
        });
        assert.equal(view.state, "ROLLED_BACK");
      },
    );

    await t.step(
      "a topic on two of three groups: heartbeats reach all, each with its topics",
      async () => {
        await routes.createTopic("two", 1, [groups[0], groups[2]]);
        await client.upsertGroup("g2", {});
        await client.heartbeat("g2", { clientId: "c1", subscriptions: [{ topic: "two" }] });
        for (const g of groups) {
          assert.deepEqual((await g.broker.groupMembers("g2")).members, ["c1"]);
        }
        assert.deepEqual((await client.assignment("g2", "c1", "two")).queueIds, [0, 2048]);
        assert.deepEqual(await client.lockQueues("g2", "c1", "two", [2048]), [2048]);
        await assert.rejects(
          client.lockQueues("g2", "c1", "two", [1024]),
          isCode("QUEUE_NOT_FOUND"),
        );
      },
    );

    await t.step("a draining group takes no writes but is still read", async () => {
      await client.upsertGroup("d", { consumeFromWhere: "FIRST_OFFSET" });
      await routes.createTopic("dr", 1);
      await client.produce("dr", { body, queueId: 2048 });
      routes.records.get("dr")![2].state = "draining";
      routes.invalidate("dr");
      for (let i = 0; i < 6; i++) assert.ok((await client.produce("dr", { body })).queueId < 2048);
      await assert.rejects(
        client.produce("dr", { body, queueId: 2048 }),
        isCode("TOPIC_PERMISSION_DENIED"),
      );
      const got = [];
      for (let i = 0; i < 5 && got.length < 7; i++) {
        got.push(...await client.receive("d", { topic: "dr", max: 7 }));
      }
      assert.ok(got.some((m) => m.queueId === 2048), "the draining group's message is read");
    });

    await t.step(
      "a broker group that never saw a consumer group is given it on first use",
      async () => {
        await groups[0].broker.upsertGroup("late", {
          consumeFromWhere: "FIRST_OFFSET",
          retryMaxTimes: 3,
        });
        await routes.createTopic("lt", 1);
        for (const q of [0, 1024, 2048]) await client.produce("lt", { body, queueId: q });
        const got = await client.receive("late", { topic: "lt", max: 32 });
        assert.deepEqual(got.map((m) => m.queueId).sort((a, b) => a - b), [0, 1024, 2048]);
        for (const g of groups) assert.equal((await g.broker.getGroup("late")).retryMaxTimes, 3);
        await client.heartbeat("late", { clientId: "c", subscriptions: [{ topic: "lt" }] });
        await assert.rejects(client.receive("never", { topic: "lt" }), isCode("GROUP_NOT_FOUND"));
      },
    );

    await t.step("a group that went away: its queues are unknown, its handles too", async () => {
      await client.upsertGroup("gone", { consumeFromWhere: "FIRST_OFFSET" });
      await routes.createTopic("gw", 1);
      await client.produce("gw", { body, queueId: 1024 });
      const got = await client.receive("gone", { topic: "gw", max: 1 });
      assert.equal(got[0].queueId, 1024);
      routes.down.add("g-b");
      routes.invalidate();
      await assert.rejects(client.pull("gw", 1024, { offset: 0 }), isCode("QUEUE_NOT_FOUND"));
      await assert.rejects(
        client.ack("gone", got[0].receiptHandle),
        isCode("RECEIPT_HANDLE_UNKNOWN"),
      );
      assert.equal((await client.health()).brokerName, "g-a,g-c");
      routes.down.delete("g-b");
      routes.invalidate();
      await client.ack("gone", got[0].receiptHandle);
    });
  }, { MQ_TRANSACTION_TIMEOUT_MS: "100", MQ_TRANSACTION_CHECK_INTERVAL_MS: "100" });
});
