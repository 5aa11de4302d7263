// Removing a drained group loses nothing owed there (issue #26 review 2, 3, 7): the check asks
// the group's drainStatus for every consumer group of the topic (also those holding a
// position only on the other groups), POP messages in flight, delayed messages and open
// transactions; a half message still commits on the drained group; the removal re-checks in
// its compare-and-set that the group is still in the same drain; a drain moves the topic's cron
// schedules to the next active group.
import assert from "node:assert/strict";
import { BrokerError, type ProblemCode } from "../protocol/errors.ts";
import type { DrainStatus } from "../protocol/ops_types.ts";
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { ClusterTopicAdmin } from "./topic_admin.ts";

const body = new TextEncoder().encode("x");
const refused = (code: ProblemCode) => (e: unknown) => e instanceof BrokerError && e.code === code;

async function owed(p: Promise<unknown>): Promise<DrainStatus> {
  const e = await p.then(() => undefined, (e) => e);
  assert.ok(refused("BROKER_GROUP_NOT_DRAINED")(e), `expected a refusal, got ${e}`);
  return (e as BrokerError).extensions!.owed as DrainStatus;
}

Deno.test("remove: refused while anything is owed on the drained group; a half message commits there", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const a = g.brokers.get("g-a")!, b = g.brokers.get("g-b")!;
    await admin.upsertTopic("t", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a", "g-b"],
    });
    for (const x of [a, b]) {
      await x.upsertGroup("cg");
      await x.upsertGroup("cp");
    }
    // cg holds a position only on g-b: every message of g-a is owed to it.
    await b.commitOffset("cg", "t", 0, 0);
    await a.produce("t", { body, queueId: 0 });
    await a.produce("t", { body, queueId: 0 });
    // cp received both by POP (its pop offset moved: lag 0 there, but invisible).
    const popped = await a.receive("cp", { topic: "t", max: 2, invisibleMs: 60_000, waitMs: 0 });
    assert.equal(popped.length, 2);
    const half = await a.beginTransaction("t", { body }, "pg");
    const delayed = await a.produce("t", { body, deliverAt: Date.now() + 3_600_000 });

    await admin.drainTopicGroup("t", "g-a");
    let status = await owed(admin.removeTopicGroup("t", "g-a"));
    assert.deepEqual(status.groups, [
      { group: "cg", unconsumed: 2, inFlight: 0, retry: 0 },
      { group: "cp", unconsumed: 0, inFlight: 2, retry: 0 },
    ]);
    assert.equal(status.openTransactions, 1);
    assert.equal(status.delayed, 1);
    assert.equal(status.drained, false);

    // The open transaction commits on the read-only topic, and its message is consumed.
    assert.equal((await a.endTransaction(half.transactionId, "COMMIT")).state, "COMMITTED");
    await a.produce("t", { body }).then(
      () => assert.fail("a new message must be refused on a drained group"),
      (e) => assert.ok(refused("TOPIC_PERMISSION_DENIED")(e)),
    );
    await assert.rejects(
      a.beginTransaction("t", { body }, "pg"),
      refused("TOPIC_PERMISSION_DENIED"),
    );
    const committed = await a.receive("cp", { topic: "t", max: 4, waitMs: 0 });
    assert.equal(committed.length, 1);
    for (const m of [...popped, ...committed]) await a.ack("cp", m.receiptHandle);
    await a.cancelScheduled("t", delayed.messageId);

    status = await owed(admin.removeTopicGroup("t", "g-a"));
    assert.deepEqual(status.groups, [{ group: "cg", unconsumed: 3, inFlight: 0, retry: 0 }]);
    assert.equal(status.openTransactions + status.delayed, 0);
    await a.commitOffset("cg", "t", 0, 3);
    const removed = await admin.removeTopicGroup("t", "g-a");
    assert.deepEqual(removed.brokerGroups.map((x) => x.name), ["g-b"]);
  }));

Deno.test("remove: re-checks in its compare-and-set that the group is still in the checked drain", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const a = g.brokers.get("g-a")!;
    await admin.upsertTopic("t", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a", "g-b"],
    });
    await admin.drainTopicGroup("t", "g-a");
    // While the removal checks, the group is added again (and then drained again).
    const status = a.drainStatus.bind(a);
    let again: "add" | "add-drain" = "add";
    Object.assign(a, {
      drainStatus: async (topic: string, groups?: string[]) => {
        const answer = await status(topic, groups);
        await admin.addTopicGroup("t", "g-a");
        if (again === "add-drain") await admin.drainTopicGroup("t", "g-a");
        return answer;
      },
    });
    await assert.rejects(admin.removeTopicGroup("t", "g-a"), refused("BROKER_GROUP_NOT_DRAINED"));
    const route = await admin.topicRoute("t");
    assert.deepEqual(route.brokerGroups.map((x) => `${x.name}:${x.state}`), [
      "g-a:active",
      "g-b:active",
    ]);
    assert.equal((await a.getTopic("t")).perm & 2, 2, "writable again");
    await admin.drainTopicGroup("t", "g-a");
    again = "add-drain";
    await assert.rejects(admin.removeTopicGroup("t", "g-a"), refused("BROKER_GROUP_NOT_DRAINED"));
    Object.assign(a, { drainStatus: status });
    await admin.removeTopicGroup("t", "g-a");
  }));

Deno.test("drain: the topic's cron schedules move to the next active group, id and last tick kept", () =>
  withGroups(["g-a", "g-b", "g-c"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const [a, b, c] = ["g-a", "g-b", "g-c"].map((n) => g.brokers.get(n)!);
    await admin.upsertTopic("t", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a", "g-b", "g-c"],
    });
    await admin.upsertTopic("other", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a"],
    });
    const message = { body, tag: "nightly", properties: { k: "v" } };
    const running = await a.createSchedule({ topic: "t", cron: "0 0 1 1 *", message });
    const paused = await a.createSchedule({
      topic: "t",
      cron: "*/5 * * * *",
      timeZone: "Europe/Paris",
      missedTicks: "fire_once",
      paused: true,
      message: { body },
    });
    const stays = await a.createSchedule({ topic: "other", cron: "0 0 1 1 *", message: { body } });
    const before = await a.exportSchedule(running.id);
    await admin.drainTopicGroup("t", "g-a");
    assert.equal((await admin.topicRoute("t")).brokerGroups[0].state, "draining");
    // Gone from g-a but for the other topic's; on g-b (first active by name), not on g-c.
    assert.deepEqual((await a.listSchedules()).map((s) => s.id), [stays.id]);
    assert.deepEqual((await c.listSchedules()).map((s) => s.id), []);
    const moved = await b.exportSchedule(running.id);
    assert.deepEqual(moved, before, "the same schedule whole: id, message, creation, last tick");
    const p = await b.getSchedule(paused.id);
    assert.deepEqual([p.paused, p.timeZone, p.missedTicks], [true, "Europe/Paris", "fire_once"]);
    assert.equal((await b.getSchedule(running.id)).paused, false, "it ticks on g-b");
    // A drain run again finds nothing to move; an import of one already there is answered.
    await admin.drainTopicGroup("t", "g-a");
    assert.equal((await b.importSchedule(moved)).id, running.id);
    await assert.rejects(
      b.importSchedule({ ...moved, topic: "other" }),
      refused("SCHEDULE_EXISTS"),
    );
    await admin.removeTopicGroup("t", "g-a");
  }));

Deno.test("drain: a schedule move that fails leaves the schedule running where it was", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const [a, b] = ["g-a", "g-b"].map((n) => g.brokers.get(n)!);
    await admin.upsertTopic("t", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a", "g-b"],
    });
    const s = await a.createSchedule({ topic: "t", cron: "0 0 1 1 *", message: { body } });
    const importSchedule = b.importSchedule;
    Object.assign(b, {
      importSchedule: () => Promise.reject(new BrokerError("BROKER_UNAVAILABLE", "g-b is down")),
    });
    await assert.rejects(admin.drainTopicGroup("t", "g-a"), refused("BROKER_UNAVAILABLE"));
    assert.equal((await a.getSchedule(s.id)).paused, false, "running again on g-a");
    assert.equal((await admin.topicRoute("t")).brokerGroups[0].state, "active", "not draining");
    Object.assign(b, { importSchedule });
    await admin.drainTopicGroup("t", "g-a");
    assert.equal((await b.getSchedule(s.id)).id, s.id);
  }));

Deno.test("add and drain of one group serialize through the record: the perm follows its state", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    const a = g.brokers.get("g-a")!;
    await admin.upsertTopic("t", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a", "g-b"],
    });
    // The drain's read-only write lands after an add that came after the drain's CAS.
    const upsert = a.upsertTopic.bind(a);
    let injected = false;
    Object.assign(a, {
      upsertTopic: async (name: string, u: { perm?: number }) => {
        if (u.perm === 4 && !injected) {
          injected = true;
          await admin.addTopicGroup("t", "g-a");
        }
        return await upsert(name, u);
      },
    });
    await admin.drainTopicGroup("t", "g-a");
    assert.ok(injected);
    const route = await admin.topicRoute("t");
    assert.equal(route.brokerGroups[0].state, "active", "the add came last");
    assert.equal((await a.getTopic("t")).perm & 2, 2, "so the topic is writable there");
  }));
