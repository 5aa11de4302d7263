// topicsMax and groupsMax (issue #19, point 7): one topic or group past the limit is a
// typed refusal that stores nothing, auto-create included, concurrent creates included.
import assert from "node:assert/strict";
import type { Broker } from "../broker.ts";
import { withBroker } from "../../tests/support/broker_testing.ts";
import { BrokerError } from "../protocol/errors.ts";

const body = new TextEncoder().encode("x");
const names = async (broker: Broker) => (await broker.listTopics()).map((t) => t.name);
const refusedWith = (code: string) => (err: unknown) =>
  err instanceof BrokerError && err.code === code;

Deno.test("TopicRegistry: topicsMax refuses one more topic, created or auto-created, and stores nothing", async () => {
  await withBroker({ MQ_TOPICS_MAX: "2" }, async (broker) => {
    await broker.upsertTopic("a", {});
    await broker.produce("b", { body }); // auto-created
    await assert.rejects(broker.upsertTopic("c", {}), refusedWith("TOO_MANY_TOPICS"));
    await assert.rejects(broker.produce("c", { body }), (err: unknown) => {
      assert.ok(err instanceof BrokerError && err.code === "TOO_MANY_TOPICS");
      assert.equal(err.type, "/problems/too-many-topics");
      assert.match(err.message, /holds 2 topics, topicsMax is 2/);
      return true;
    });
    assert.deepEqual(await names(broker), ["a", "b"]);
    // Updating a topic it holds is no new topic.
    assert.equal((await broker.upsertTopic("a", { writeQueueNums: 2 })).writeQueueNums, 2);
    await broker.produce("a", { body });

    // A deleted topic makes room for one, and only one of three concurrent auto-creates.
    await broker.deleteTopic("a");
    const results = await Promise.allSettled(
      ["x", "y", "z"].map((t) => broker.produce(t, { body })),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results) {
      if (r.status === "rejected") assert.ok(refusedWith("TOO_MANY_TOPICS")(r.reason));
    }
    assert.equal((await names(broker)).length, 2);
  });
});

Deno.test("TopicRegistry: at topicsMax a group's %RETRY% topic still takes a nacked message", async () => {
  await withBroker({ MQ_TOPICS_MAX: "1" }, async (broker) => {
    await broker.upsertGroup("g", { consumeFromWhere: "FIRST_OFFSET" });
    await broker.produce("a", { body });
    const [first] = await broker.receive("g", { topic: "a", waitMs: 0 });
    await broker.nack("g", first.receiptHandle, 0);
    let again: Awaited<ReturnType<Broker["receive"]>> = [];
    for (let i = 0; i < 50 && again.length === 0; i++) {
      again = await broker.receive("g", { topic: "a", waitMs: 100 });
    }
    assert.equal(again.length, 1);
    assert.equal(again[0].reconsumeTimes, 1);
    assert.deepEqual(await names(broker), ["a"]);
  });
});

Deno.test("GroupRegistry: groupsMax refuses one more group and stores nothing", async () => {
  await withBroker({ MQ_GROUPS_MAX: "1" }, async (broker) => {
    await broker.upsertGroup("g", {});
    await broker.upsertGroup("g", { retryMaxTimes: 3 }); // an update, not a new group
    await assert.rejects(broker.upsertGroup("h", {}), refusedWith("TOO_MANY_GROUPS"));
    await assert.rejects(broker.getGroup("h"), refusedWith("GROUP_NOT_FOUND"));
    const concurrent = await Promise.allSettled([broker.upsertGroup("i"), broker.upsertGroup("j")]);
    assert.ok(concurrent.every((r) => r.status === "rejected"));
  });
  await withBroker({ MQ_GROUPS_MAX: "2" }, async (broker) => {
    await broker.upsertGroup("g", {});
    const concurrent = await Promise.allSettled([broker.upsertGroup("i"), broker.upsertGroup("j")]);
    assert.equal(concurrent.filter((r) => r.status === "fulfilled").length, 1);
  });
});
