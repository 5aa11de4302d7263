// The Broker in process. produce(): refusals are rejections (never a synchronous throw), and
// the replication gate is asked on every client write, its errors passed through unchanged.
// pull() and receive(): the client's signal is read only to wait, and releases the wait.
import assert from "node:assert/strict";
import type { Broker, ReplicationGate } from "./broker.ts";
import { withBroker as withTestBroker } from "../tests/support/broker_testing.ts";
import { BrokerError } from "./protocol/errors.ts";

function withBroker(
  gate: ReplicationGate | undefined,
  env: Record<string, string>,
  f: (broker: Broker) => Promise<void>,
) {
  return withTestBroker(env, f, gate);
}

const body = new TextEncoder().encode("hello");

Deno.test("Broker.produce() asks the replication gate on every write and passes its errors through", async () => {
  const calls: string[] = [];
  const notLeader = new BrokerError("NOT_LEADER", "Cannot write: not the leader");
  const timeout = new BrokerError("REPLICATION_TIMEOUT", "Cannot confirm in time");
  let refuse = false;
  let confirmWith: number | BrokerError = 3;
  const gate: ReplicationGate = {
    checkWritable() {
      calls.push("checkWritable");
      if (refuse) throw notLeader;
    },
    confirm(endOffset) {
      calls.push(`confirm ${endOffset}`);
      return confirmWith instanceof BrokerError
        ? Promise.reject(confirmWith)
        : Promise.resolve(confirmWith);
    },
  };
  await withBroker(gate, {}, async (broker) => {
    await broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    calls.length = 0;
    const first = await broker.produce("t", { body });
    assert.deepEqual(Object.keys(first), [
      "messageId",
      "topic",
      "queueId",
      "queueOffset",
      "commitLogOffset",
      "storeTimestamp",
      "durability",
      "replicas",
    ]);
    assert.equal(first.replicas, 3);
    assert.equal(first.queueOffset, 0);
    const end = broker.store.maxPhysicalOffset;
    assert.deepEqual(calls, ["checkWritable", `confirm ${end}`]);

    confirmWith = timeout;
    calls.length = 0;
    await assert.rejects(broker.produce("t", { body }), (err) => err === timeout);
    assert.deepEqual(calls, ["checkWritable", `confirm ${broker.store.maxPhysicalOffset}`]);

    refuse = true;
    calls.length = 0;
    const before = broker.store.maxPhysicalOffset;
    const refused = broker.produce("t", { body }); // a promise, not a throw
    await assert.rejects(refused, (err) => err === notLeader);
    assert.deepEqual(calls, ["checkWritable"]);
    assert.equal(broker.store.maxPhysicalOffset, before);
  });
});

Deno.test("Broker.produce() rejects a topic without WRITE and a bad message; creates a missing topic", async () => {
  await withBroker(undefined, {}, async (broker) => {
    await broker.upsertTopic("ro", { readQueueNums: 1, writeQueueNums: 1, perm: 4 });
    await assert.rejects(
      broker.produce("ro", { body }),
      (err) => err instanceof BrokerError && err.code === "TOPIC_PERMISSION_DENIED",
    );
    await broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    await assert.rejects(
      broker.produce("t", { body, queueId: 5 }),
      (err) => err instanceof BrokerError && err.code === "QUEUE_NOT_FOUND",
    );
    const created = await broker.produce("fresh", { body });
    assert.equal(created.topic, "fresh");
    assert.equal(created.queueOffset, 0);
    assert.equal(created.replicas, undefined);
    assert.ok(broker.topicNames.includes("fresh"));
  });
});

Deno.test("Broker.produce() refuses a missing topic when autoCreateTopicEnable is off", async () => {
  await withBroker(undefined, { MQ_AUTO_CREATE_TOPIC: "false" }, async (broker) => {
    await assert.rejects(
      broker.produce("nope", { body }),
      (err) => err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND",
    );
  });
});

Deno.test("Broker.pull() and receive() read the client's signal only to wait; an abort releases the wait", async () => {
  await withBroker(undefined, {}, async (broker) => {
    await broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    await broker.upsertGroup("g");
    await broker.produce("t", { body });
    const controller = new AbortController();
    let reads = 0;
    const signal = () => {
      reads++;
      return controller.signal;
    };
    const found = await broker.pull("t", 0, { offset: 0, waitMs: 5000 }, signal);
    assert.equal(found.messages.length, 1);
    assert.equal(reads, 0, "an answer at once never reads the signal");

    const [popped] = await broker.receive("g", { topic: "t", waitMs: 5000 }, signal);
    assert.equal(popped.queueOffset, 0);
    assert.equal(reads, 0);

    const started = Date.now();
    const held = broker.pull("t", 0, { offset: 1, waitMs: 5000 }, signal);
    const receiving = broker.receive("g", { topic: "t", waitMs: 5000 }, signal);
    // Both reach their wait after a read of the store (slow on a busy disk): wait for that.
    for (const end = Date.now() + 3000; reads < 2 && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(reads, 2, "each wait reads it once");
    assert.ok(broker.holds.held >= 2);
    controller.abort();
    const [pulled, received] = await Promise.all([held, receiving]);
    assert.equal(pulled.status, "NO_NEW_MESSAGE");
    assert.deepEqual(received, []);
    assert.ok(Date.now() - started < 2000, "released at the abort, not at waitMs");
    assert.equal(broker.holds.held, 0);
  });
});

Deno.test("Broker.produce() applies the produce rules to in-process callers, not only at the HTTP edge", async () => {
  await withBroker(undefined, {}, async (broker) => {
    await broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    const before = broker.store.maxPhysicalOffset;
    const refused = (code: string) => (err: unknown) =>
      err instanceof BrokerError && err.code === code;
    await assert.rejects(broker.produce("t", { body, tag: "a||b" }), refused("INVALID_HEADER"));
    await assert.rejects(
      broker.produce("t", { body, tag: "x".repeat(129) }),
      refused("INVALID_HEADER"),
    );
    await assert.rejects(
      broker.produce("t", { body, keys: ["has space"] }),
      refused("INVALID_HEADER"),
    );
    await assert.rejects(
      broker.produce("t", { body, keys: Array.from({ length: 33 }, (_, i) => `k${i}`) }),
      refused("INVALID_HEADER"),
    );
    await assert.rejects(
      broker.produce("t", { body, properties: { TAGS: "x" } }),
      refused("INVALID_PROPERTY"),
    );
    await assert.rejects(
      broker.produce("t", { body, delayLevel: 1, delayMs: 5 }),
      refused("INVALID_PARAMETER"),
    );
    await assert.rejects(
      broker.produce("t", { body, messageId: "has space" }),
      refused("INVALID_PARAMETER"),
    );
    await assert.rejects(
      broker.createSchedule({ topic: "t", cron: "* * * * *", message: { body, tag: "a||b" } }),
      refused("INVALID_HEADER"),
    );
    assert.equal(broker.store.maxPhysicalOffset, before, "a refused message stores nothing");
    assert.deepEqual(await broker.listSchedules(), []);
    // A producer's own id (RocketMQ 5 clients make one) is kept and indexed.
    const own = await broker.produce("t", { body, messageId: "producer-made-1" });
    assert.equal(own.messageId, "producer-made-1");
    const found = await broker.findMessages("t", { key: "producer-made-1" });
    assert.deepEqual(found.map((m) => m.messageId), ["producer-made-1"]);
  });
});

Deno.test("Broker.redriveDlq() writes through the producer: the replication gate confirms each re-put", async () => {
  const calls: string[] = [];
  let refuse = false;
  const gate: ReplicationGate = {
    checkWritable() {
      calls.push("checkWritable");
      if (refuse) throw new BrokerError("NOT_LEADER", "Cannot write: not the leader");
    },
    confirm(endOffset) {
      calls.push(`confirm ${endOffset}`);
      return Promise.resolve(2);
    },
  };
  await withBroker(gate, {}, async (broker) => {
    await broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    await broker.upsertGroup("g", { retryMaxTimes: 0 });
    const sent = await broker.produce("t", { body });
    const [got] = await broker.receive("g", { topic: "t", max: 1, invisibleMs: 10_000 });
    await broker.nack("g", got.receiptHandle, 0);
    const deadline = Date.now() + 10_000;
    while ((await broker.listDlq("g")).messages.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual((await broker.listDlq("g")).messages.map((m) => m.messageId), [
      sent.messageId,
    ]);

    refuse = true;
    const before = broker.store.maxPhysicalOffset;
    await assert.rejects(
      broker.redriveDlq("g"),
      (err) => err instanceof BrokerError && err.code === "NOT_LEADER",
    );
    assert.equal(broker.store.maxPhysicalOffset, before, "a refused redrive writes nothing");

    refuse = false;
    calls.length = 0;
    assert.deepEqual(await broker.redriveDlq("g"), { redriven: 1 });
    assert.deepEqual(calls, ["checkWritable", `confirm ${broker.store.maxPhysicalOffset}`]);
    const page = await broker.pull("t", 0, { offset: 1 });
    assert.deepEqual(page.messages.map((m) => [m.messageId, m.reconsumeTimes]), [[
      sent.messageId,
      0,
    ]]);
  });
});
