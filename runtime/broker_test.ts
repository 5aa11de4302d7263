// The Broker in process. produce(): refusals are rejections (never a synchronous throw), and
// the replication gate is asked on every client write, its errors passed through unchanged.
// pull() and receive(): the client's signal is read only to wait, and releases the wait.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadBrokerConfig } from "./config.ts";
import { Broker, type ReplicationGate } from "./broker.ts";
import { BrokerError } from "./protocol/errors.ts";
import { NodeFilePort } from "../storage/node_fs_port.ts";

async function withBroker(
  gate: ReplicationGate | undefined,
  env: Record<string, string>,
  f: (broker: Broker) => Promise<void>,
) {
  const dataDir = mkdtempSync(`${tmpdir()}/mq-produce-test-`);
  const config = loadBrokerConfig({}, {
    DATA_DIR: dataDir,
    PORT: "0",
    MQ_SEGMENT_ZERO_FILL: "false",
    ...env,
  }, []);
  const broker = new Broker({
    config,
    files: new NodeFilePort(),
    nowMs: () => Date.now(),
    log: () => {},
    runtime: "test",
    pid: 1,
    random: () => 0.5,
    ...(gate ? { replication: gate } : {}),
  });
  await broker.start();
  try {
    await f(broker);
  } finally {
    await broker.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
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
    await new Promise((r) => setTimeout(r, 20));
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
