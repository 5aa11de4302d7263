// ClusterTopicAdmin over a Deno KV file with in-process Brokers as the groups: upsert with
// named groups, counts and defaults; aggregated reads; expansion (new slot), drain (record
// and read-only perm), removal rules (draining, lag 0, unless forced); delete.
import assert from "node:assert/strict";
import { BrokerError, type ProblemCode } from "../protocol/errors.ts";
import { PERM_READ } from "../protocol/types.ts";
import { CLUSTER, withGroups } from "../../tests/support/cluster_testing.ts";
import { topicRouteKey } from "./route_record.ts";
import { ClusterTopicAdmin } from "./topic_admin.ts";

const body = new TextEncoder().encode("x");
const refused = (code: ProblemCode) => (e: unknown) => e instanceof BrokerError && e.code === code;
const groupsOf = (v: { brokerGroups: { name: string; slot: number; state: string }[] }) =>
  v.brokerGroups.map((g) => `${g.name}@${g.slot}:${g.state}`);

Deno.test("ClusterTopicAdmin: upsert over named groups, counts, defaults; refusals change nothing", () =>
  withGroups(["g-a", "g-b", "g-c"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const b = (n: string) => g.brokers.get(n)!;

    await assert.rejects(
      admin.upsertTopic("t", { brokerGroups: ["g-a", "nope"] }),
      refused("BROKER_GROUP_NOT_FOUND"),
    );
    await assert.rejects(
      admin.upsertTopic("t", { brokerGroups: ["g-a"], brokerGroupCount: 1 }),
      refused("INVALID_PARAMETER"),
    );
    await assert.rejects(
      admin.upsertTopic("t", { brokerGroupCount: 4 }),
      refused("INVALID_PARAMETER"),
    );
    assert.equal(await g.kv.get(topicRouteKey(CLUSTER, "t")), null);
    assert.deepEqual(b("g-a").topicNames.filter((n) => n === "t"), []);

    // Named groups, per-group counts; reads aggregate.
    const t = await admin.upsertTopic("t", {
      readQueueNums: 2,
      writeQueueNums: 2,
      brokerGroups: ["g-c", "g-a"],
    });
    assert.deepEqual(t, { name: "t", readQueueNums: 4, writeQueueNums: 4, perm: 6, order: false });
    assert.deepEqual(groupsOf(await admin.topicRoute("t")), ["g-c@0:active", "g-a@1:active"]);
    assert.equal((await b("g-c").getTopic("t")).readQueueNums, 2);
    assert.deepEqual(b("g-b").topicNames.filter((n) => n === "t"), []);

    // An update changes every group of the topic; a count adds the least-loaded group.
    await admin.upsertTopic("t", { readQueueNums: 3, writeQueueNums: 3 });
    assert.equal((await b("g-a").getTopic("t")).writeQueueNums, 3);
    assert.deepEqual(
      (await admin.topicRoute("t")).queues.map((q) => q.queueId),
      [0, 1, 2, 1024, 1025, 1026],
      "the admin's route asks the groups, not their registrations of before",
    );
    const spread = await admin.upsertTopic("t", { brokerGroupCount: 3 });
    assert.equal(spread.readQueueNums, 9, "the answer counts the group that just joined");
    assert.deepEqual(groupsOf(await admin.topicRoute("t")), [
      "g-c@0:active",
      "g-a@1:active",
      "g-b@2:active",
    ]);
    assert.equal(
      (await b("g-b").getTopic("t")).readQueueNums,
      3,
      "a joining group copies the counts",
    );

    // The default spreads over every live group; count picks the groups with fewest topics.
    await admin.upsertTopic("all", {});
    assert.deepEqual(groupsOf(await admin.topicRoute("all")), [
      "g-a@0:active",
      "g-b@1:active",
      "g-c@2:active",
    ]);
    await b("g-a").upsertTopic("extra", {});
    await b("g-b").upsertTopic("extra", {});
    await g.register();
    await admin.upsertTopic("one", { brokerGroupCount: 1 });
    assert.deepEqual(groupsOf(await admin.topicRoute("one")), ["g-c@0:active"]);

    const listed = (await admin.listTopics()).find((x) => x.name === "t")!;
    assert.equal(listed.readQueueNums, 9);

    await admin.deleteTopic("t");
    assert.equal(await g.kv.get(topicRouteKey(CLUSTER, "t")), null);
    await assert.rejects(b("g-a").getTopic("t"), refused("TOPIC_NOT_FOUND"));
    await assert.rejects(admin.deleteTopic("t"), refused("TOPIC_NOT_FOUND"));
    await assert.rejects(admin.topicRoute("t"), refused("TOPIC_NOT_FOUND"));
  }));

Deno.test("ClusterTopicAdmin: add a group, drain one (read-only there), remove only when drained", () =>
  withGroups(["g-a", "g-b", "g-c"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const b = (n: string) => g.brokers.get(n)!;
    await admin.upsertTopic("t", {
      readQueueNums: 2,
      writeQueueNums: 2,
      brokerGroups: ["g-a", "g-b"],
    });

    await assert.rejects(admin.addTopicGroup("t", "nope"), refused("BROKER_GROUP_NOT_FOUND"));
    await assert.rejects(admin.addTopicGroup("missing", "g-c"), refused("TOPIC_NOT_FOUND"));
    const added = await admin.addTopicGroup("t", "g-c");
    assert.deepEqual(groupsOf(added), ["g-a@0:active", "g-b@1:active", "g-c@2:active"]);
    assert.deepEqual(added.queues.filter((q) => q.brokerGroup === "g-c").map((q) => q.queueId), [
      2048,
      2049,
    ]);
    assert.deepEqual(await admin.addTopicGroup("t", "g-c"), added, "adding again changes nothing");

    // A consumer group that has read nothing of g-a's one message.
    await b("g-a").produce("t", { body, queueId: 0 });
    await b("g-a").upsertGroup("cg");
    await b("g-a").commitOffset("cg", "t", 0, 0);

    await assert.rejects(admin.removeTopicGroup("t", "g-a"), refused("BROKER_GROUP_NOT_DRAINED"));
    await assert.rejects(admin.drainTopicGroup("t", "nope"), refused("BROKER_GROUP_NOT_FOUND"));
    const drained = await admin.drainTopicGroup("t", "g-a");
    assert.deepEqual(groupsOf(drained), ["g-a@0:draining", "g-b@1:active", "g-c@2:active"]);
    assert.ok(
      drained.queues.filter((q) => q.brokerGroup === "g-a").every((q) => q.readable && !q.writable),
    );
    assert.equal((await b("g-a").getTopic("t")).perm, PERM_READ);
    await assert.rejects(b("g-a").produce("t", { body }), refused("TOPIC_PERMISSION_DENIED"));
    assert.equal((await admin.getTopic("t")).writeQueueNums, 4, "draining queues are not writable");

    const lagging = await admin.removeTopicGroup("t", "g-a").catch((e) => e);
    assert.ok(refused("BROKER_GROUP_NOT_DRAINED")(lagging), String(lagging));
    assert.deepEqual(lagging.extensions.owed.groups, [
      { group: "cg", unconsumed: 1, inFlight: 0, retry: 0 },
    ]);

    await b("g-a").commitOffset("cg", "t", 0, 1);
    const removed = await admin.removeTopicGroup("t", "g-a");
    assert.deepEqual(groupsOf(removed), ["g-b@1:active", "g-c@2:active"]);
    await assert.rejects(b("g-a").getTopic("t"), refused("TOPIC_NOT_FOUND"));

    // Slots are never reused: g-a comes back at slot 3.
    assert.deepEqual(groupsOf(await admin.addTopicGroup("t", "g-a")), [
      "g-b@1:active",
      "g-c@2:active",
      "g-a@3:active",
    ]);

    // The last active group cannot drain; the last group cannot leave.
    await admin.drainTopicGroup("t", "g-b");
    await admin.drainTopicGroup("t", "g-c");
    await assert.rejects(admin.drainTopicGroup("t", "g-a"), refused("TOPIC_ROUTE_CONFLICT"));
    // A drained group added again is active and writable again.
    const back = await admin.addTopicGroup("t", "g-b");
    assert.deepEqual(groupsOf(back)[0], "g-b@1:active");
    assert.equal((await b("g-b").getTopic("t")).perm & 2, 2);

    // Force removes an active group with messages left.
    await b("g-a").produce("t", { body, queueId: 0 });
    const forced = await admin.removeTopicGroup("t", "g-a", { force: true });
    assert.deepEqual(groupsOf(forced), ["g-b@1:active", "g-c@2:draining"]);
    await admin.removeTopicGroup("t", "g-c");
    await assert.rejects(
      admin.removeTopicGroup("t", "g-b", { force: true }),
      refused("TOPIC_ROUTE_CONFLICT"),
    );
  }));
