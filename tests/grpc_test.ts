// The RocketMQ 5 gRPC front end against the unchanged official Node client
// (rocketmq-client-nodejs), with a real broker process on Deno and on Bun (one broker per
// runtime for every scenario): Producer sends normal, FIFO and delayed messages;
// SimpleConsumer receives, acks, changes the invisible duration, sees a message come back
// with a higher delivery attempt, and past max attempts the message is in the DLQ;
// PushConsumer consumes and retries; the
// two front ends share state both ways; wrong keys are refused with gRPC statuses; bad
// frames and unknown RPCs get a status and the server keeps serving.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execFile } from "node:child_process";
import { Producer, SimpleConsumer } from "rocketmq-client-nodejs";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";
import { MqClient } from "../client/mod.ts";
import { connectRaw, rawCall } from "./support/grpc_raw.ts";

const ADMIN = { key: "grpc-admin-key-0123456789", name: "admin", admin: true };
const READER = { key: "grpc-reader-key-0123456789", name: "reader", subscribe: ["*"] };
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type View = {
  messageId: string;
  body: Buffer;
  tag?: string;
  keys: string[];
  messageGroup?: string;
  deliveryAttempt: number;
  deliveryTimestamp?: Date;
  properties: Map<string, string>;
};

function producerOf(endpoints: string, topics: string[], key = ADMIN) {
  return new Producer({
    endpoints,
    namespace: "",
    topics,
    logger: quiet,
    sessionCredentials: { accessKey: key.name, accessSecret: key.key },
  } as never);
}

function consumerOf(endpoints: string, group: string, topic: string, tag = "*") {
  return new SimpleConsumer({
    endpoints,
    namespace: "",
    consumerGroup: group,
    subscriptions: new Map([[topic, tag]]),
    awaitDuration: 1500,
    logger: quiet,
    sessionCredentials: { accessKey: ADMIN.name, accessSecret: ADMIN.key },
  } as never);
}

/** Receives until `n` messages came or `ms` passed. */
async function receiveN(
  c: SimpleConsumer,
  n: number,
  invisibleMs: number,
  ms = 8000,
): Promise<View[]> {
  const out: View[] = [];
  const until = Date.now() + ms;
  while (out.length < n && Date.now() < until) {
    out.push(...(await c.receive(n - out.length, invisibleMs)) as unknown as View[]);
  }
  return out;
}

for (const runtime of RUNTIMES) {
  Deno.test({
    name: `gRPC front end on ${runtime}: the official RocketMQ 5 Node client`,
    fn: async (t) => {
      await using b = await startBroker(runtime, {
        env: {
          MQ_API_KEYS: JSON.stringify([ADMIN, READER]),
          MQ_PULL_WAIT_MS_MAX: "3000",
          MQ_GRPC_AUTO_RENEW_MS: "1500",
        },
        token: ADMIN.key,
      });
      assert.ok(b.grpc, "the listening line names the gRPC address");
      const endpoints = b.grpc!;
      const mq: MqClient = b.client;
      await mq.upsertTopic("Orders", { readQueueNums: 2, writeQueueNums: 2 });
      await mq.upsertTopic("Fifo", { readQueueNums: 4, writeQueueNums: 4 });
      await mq.upsertTopic("Later", { readQueueNums: 1, writeQueueNums: 1 });
      await mq.upsertTopic("Poison", { readQueueNums: 1, writeQueueNums: 1 });
      await mq.upsertTopic("Held", { readQueueNums: 1, writeQueueNums: 1 });
      await mq.upsertGroup("http-side", { consumeFromWhere: "FIRST_OFFSET" });
      await mq.upsertGroup("grpc-side", { consumeFromWhere: "FIRST_OFFSET" });
      await mq.upsertGroup("fifo-side", { consumeFromWhere: "FIRST_OFFSET" });
      await mq.upsertGroup("later-side", { consumeFromWhere: "FIRST_OFFSET" });
      await mq.upsertGroup("strict", { consumeFromWhere: "FIRST_OFFSET", retryMaxTimes: 1 });
      await mq.upsertGroup("held-side", { consumeFromWhere: "FIRST_OFFSET" });

      const producer = producerOf(endpoints, ["Orders", "Fifo", "Later", "Poison"]);
      await producer.startup();

      await t.step(
        "Producer sends a normal message; HTTP consumers receive it as sent",
        async () => {
          const receipt = await producer.send({
            topic: "Orders",
            tag: "created",
            keys: ["order-1"],
            properties: new Map([["region", "eu"]]),
            body: Buffer.from("order one"),
          });
          assert.match(receipt.messageId, /^01[0-9A-F]{32}$/, "the client's own id is kept");
          const [m] = await mq.receive("http-side", { topic: "Orders", waitMs: 2000 });
          assert.equal(m.body, "order one");
          assert.equal(m.messageId, receipt.messageId);
          assert.equal(m.tag, "created");
          assert.deepEqual(m.keys, ["order-1"]);
          assert.equal(m.properties.region, "eu");
          await mq.ack("http-side", m.receiptHandle);
        },
      );

      await t.step("FIFO: a message group is one queue, in order", async () => {
        const ids = [];
        for (let i = 0; i < 6; i++) {
          const r = await producer.send({
            topic: "Fifo",
            messageGroup: `cart-${i % 2}`,
            body: Buffer.from(`step ${i}`),
          });
          ids.push(r.messageId);
        }
        const consumer = consumerOf(endpoints, "fifo-side", "Fifo");
        await consumer.startup();
        try {
          const got = await receiveN(consumer, 6, 20_000);
          assert.equal(got.length, 6);
          for (const group of ["cart-0", "cart-1"]) {
            const mine = got.filter((m) => m.messageGroup === group).map((m) => m.body.toString());
            const want = [0, 1, 2, 3, 4, 5].filter((i) => `cart-${i % 2}` === group)
              .map((i) => `step ${i}`);
            assert.deepEqual(mine, want, `group ${group} in send order`);
          }
          const queues = await mq.pull("Fifo", 0, { offset: 0, max: 32 }).then(async (q0) => {
            const all = [q0];
            for (let q = 1; q < 4; q++) all.push(await mq.pull("Fifo", q, { offset: 0, max: 32 }));
            return all.map((r) => new Set(r.messages.map((m) => m.shardingKey)));
          });
          for (const g of ["cart-0", "cart-1"]) {
            assert.equal(queues.filter((s) => s.has(g)).length, 1, `${g} is in one queue`);
          }
          for (const m of got) await consumer.ack(m as never);
          assert.deepEqual(new Set(got.map((m) => m.messageId)), new Set(ids));
        } finally {
          await consumer.shutdown();
        }
      });

      await t.step(
        "delayed messages are hidden until their time and carry delivery_timestamp",
        async () => {
          const sent = Date.now();
          // gRPC's delay (a timer message), HTTP's delayMs and deliverAt (timers) and delay
          // level 1 (1 s): each is delivered with the time it was due.
          // A relative delay counts from when its own call was made (not from `sent`: the
          // calls before it may take a while on busy cores).
          await producer.send({ topic: "Later", delay: 1500, body: Buffer.from("later") });
          const delayMsAt = Date.now();
          await mq.produce("Later", { body: "delay-ms", delayMs: 1200 });
          await mq.produce("Later", { body: "deliver-at", deliverAt: sent + 1300 });
          const levelAt = Date.now();
          await mq.produce("Later", { body: "level-1", delayLevel: 1 });
          const due: Record<string, number> = {
            later: sent + 1500,
            "delay-ms": delayMsAt + 1200,
            "deliver-at": sent + 1300,
            "level-1": levelAt + 1000,
          };
          const consumer = consumerOf(endpoints, "later-side", "Later");
          await consumer.startup();
          try {
            const got = await receiveN(consumer, 4, 20_000, 10_000);
            assert.deepEqual(got.map((m) => m.body.toString()).sort(), Object.keys(due).sort());
            assert.ok(Date.now() - sent >= 1400, `came ${Date.now() - sent} ms after the send`);
            for (const m of got) {
              const body = m.body.toString();
              const at = m.deliveryTimestamp?.getTime();
              assert.ok(at !== undefined, `${body} has a delivery timestamp`);
              // Within a second of when it was due (the send itself and the 1 s timer
              // precision of the wheel and the levels).
              assert.ok(Math.abs(at - due[body]) < 1000, `${body}: due ${due[body]}, got ${at}`);
              await consumer.ack(m as never);
            }
          } finally {
            await consumer.shutdown();
          }
        },
      );

      await t.step(
        "SimpleConsumer: HTTP-produced messages, ack, change invisible duration, redelivery",
        async () => {
          const consumer = consumerOf(endpoints, "grpc-side", "Orders");
          await consumer.startup();
          try {
            // The group's POP state is shared: the first message (acked over HTTP by another
            // group) is still new for this one.
            for (const body of ["from http 1", "from http 2", "from http 3"]) {
              await mq.produce("Orders", { body, tag: "http" });
            }
            // Invisible for 2 s: four calls below must settle them first, on busy cores.
            const got = await receiveN(consumer, 4, 2000);
            assert.deepEqual(
              got.map((m) => m.body.toString()).sort(),
              ["from http 1", "from http 2", "from http 3", "order one"],
            );
            assert.ok(got.every((m) => m.deliveryAttempt === 1));
            assert.ok(got.every((m) => m.deliveryTimestamp === undefined), "not delayed: none");
            const [keep, extend, ...rest] = got;
            await consumer.ack(keep as never);
            await consumer.changeInvisibleDuration(extend as never, 6000);
            for (const m of rest) await consumer.ack(m as never);
            // `extend` is hidden past its first two seconds; nothing else is left.
            await sleep(2300);
            assert.deepEqual(await consumer.receive(5, 1000), []);
            await consumer.ack(extend as never); // the handle from the change still works

            // One not acked comes back after its invisible time with attempt 2.
            await mq.produce("Orders", { body: "forgotten" });
            const [first] = await receiveN(consumer, 1, 800);
            assert.equal(first.body.toString(), "forgotten");
            const [again] = await receiveN(consumer, 1, 5000);
            assert.equal(again.messageId, first.messageId);
            assert.equal(again.deliveryAttempt, 2);
            await consumer.ack(again as never);
            // Its old handle is dead: INVALID_RECEIPT_HANDLE.
            await assert.rejects(consumer.ack(first as never), /response-code=40013/);
          } finally {
            await consumer.shutdown();
          }
        },
      );

      await t.step(
        "PushConsumer: consumes, and a failed message comes back with attempt 2",
        async () => {
          await mq.upsertTopic("Pushed", { readQueueNums: 2, writeQueueNums: 2 });
          await mq.upsertGroup("pushers", { consumeFromWhere: "FIRST_OFFSET" });
          for (let i = 0; i < 4; i++) await mq.produce("Pushed", { body: `p${i}` });
          const script = new URL("./support/grpc_push_consumer.mjs", import.meta.url).pathname;
          const out = await new Promise<string>((resolve, reject) =>
            execFile(
              "node",
              [script, endpoints, "pushers", "Pushed", "4", ADMIN.name, ADMIN.key],
              (err, stdout) => err ? reject(err) : resolve(stdout),
            )
          );
          assert.deepEqual(JSON.parse(out), ["p0@1", "p1@1", "p2@2", "p3@1"]);
        },
      );

      await t.step("past max attempts the message is in the group's DLQ", async () => {
        const r = await producer.send({ topic: "Poison", body: Buffer.from("poison") });
        const consumer = consumerOf(endpoints, "strict", "Poison");
        await consumer.startup();
        try {
          const seen = [];
          const until = Date.now() + 15_000;
          while (Date.now() < until) {
            const got = await consumer.receive(1, 400) as unknown as View[];
            seen.push(...got.map((m) => m.deliveryAttempt));
            const dlq = await mq.listDlq("strict");
            if (dlq.messages.some((m) => m.messageId === r.messageId)) break;
          }
          assert.deepEqual(seen, [1, 2], "delivered retryMaxTimes + 1 times, then buried");
          const dlq = await mq.listDlq("strict");
          const letter = dlq.messages.find((m) => m.messageId === r.messageId);
          assert.equal(letter?.body, "poison");
          assert.equal(letter?.topic, "Poison");
        } finally {
          await consumer.shutdown();
        }
      });

      await t.step("auto_renew receives stay leased until acked", async () => {
        // The lease is 1.5 s here (MQ_GRPC_AUTO_RENEW_MS): unrenewed, the message would
        // come back to another receive of the group after it.
        const raw = connectRaw(endpoints, ADMIN);
        try {
          const { messageId } = await mq.produce("Held", { body: "keep me" });
          const received = await rawCall(raw, "receiveMessage", {
            group: { name: "held-side" },
            messageQueue: { topic: { name: "Held" }, id: 0 },
            filterExpression: { type: 1, expression: "*" },
            batchSize: 1,
            autoRenew: true,
            longPollingTimeout: { seconds: 2 },
          }) as { message?: { systemProperties: { receiptHandle: string; messageId: string } } }[];
          const msg = received.find((r) => r.message)!.message!;
          assert.equal(msg.systemProperties.messageId, messageId);
          await new Promise((r) => setTimeout(r, 4000));
          const again = await mq.receive("held-side", { topic: "Held", waitMs: 0 });
          assert.deepEqual(again.map((m) => m.messageId), [], "still leased to the gRPC client");
          const ack = await rawCall(raw, "ackMessage", {
            group: { name: "held-side" },
            topic: { name: "Held" },
            entries: [{ messageId, receiptHandle: msg.systemProperties.receiptHandle }],
          }) as { status: { code: number } };
          assert.equal(ack.status.code, 20000);
        } finally {
          raw.close();
        }
      });

      await t.step(
        "ForwardMessageToDeadLetterQueue buries at once; EndTransaction says why not",
        async () => {
          const raw = connectRaw(endpoints, ADMIN);
          try {
            const { messageId } = await mq.produce("Poison", { body: "bury me" });
            const received = await rawCall(raw, "receiveMessage", {
              group: { name: "strict" },
              messageQueue: { topic: { name: "Poison" }, id: 0 },
              filterExpression: { type: 1, expression: "*" },
              batchSize: 1,
              invisibleDuration: { seconds: 30 },
              longPollingTimeout: { seconds: 2 },
            }) as {
              message?: { systemProperties: { receiptHandle: string; messageId: string } };
            }[];
            const msg = received.find((r) => r.message)!.message!;
            assert.equal(msg.systemProperties.messageId, messageId);
            const fwd = await rawCall(raw, "forwardMessageToDeadLetterQueue", {
              group: { name: "strict" },
              topic: { name: "Poison" },
              receiptHandle: msg.systemProperties.receiptHandle,
              messageId,
              deliveryAttempt: 1,
              maxDeliveryAttempts: 16,
            }) as { status: { code: number } };
            assert.equal(fwd.status.code, 20000);
            const dlq = await mq.listDlq("strict");
            assert.ok(dlq.messages.some((m) => m.messageId === messageId && m.body === "bury me"));
            const end = await rawCall(raw, "endTransaction", {
              topic: { name: "Orders" },
              messageId,
              transactionId: messageId,
              resolution: 1,
              source: 1,
            }) as { status: { code: number; message: string } };
            // A plain message is no transaction (tests/transactions_grpc_test.ts ends real ones).
            assert.notEqual(end.status.code, 20000);
            assert.match(end.status.message, /transaction/);
          } finally {
            raw.close();
          }
        },
      );

      await t.step(
        "wrong keys: UNAUTHENTICATED; a key without the right: PERMISSION_DENIED",
        async () => {
          const bad = connectRaw(endpoints, { name: "admin", key: "not-the-admin-key-000000" });
          const reader = connectRaw(endpoints, READER);
          const none = connectRaw(endpoints, undefined);
          try {
            for (const client of [bad, none]) {
              await assert.rejects(
                rawCall(client, "queryRoute", { topic: { name: "Orders" } }),
                (e: { code?: number }) => e.code === 16,
              );
            }
            await assert.rejects(
              rawCall(reader, "sendMessage", {
                messages: [{
                  topic: { name: "Orders" },
                  systemProperties: { messageId: "01AB", messageType: 1 },
                  body: Buffer.from("x"),
                }],
              }),
              (e: { code?: number }) => e.code === 7,
            );
            const route = await rawCall(reader, "queryRoute", { topic: { name: "Orders" } }) as {
              status: { code: number };
            };
            assert.equal(route.status.code, 20000, "the reader may see the topic");
            const wrong = producerOf(endpoints, ["Orders"], {
              ...ADMIN,
              key: "wrong-secret-000000000",
            });
            // Node retries QueryRoute thrice, then gives up (the raw calls above show the code).
            await assert.rejects(wrong.startup(), /Failed to fetch topic routes/);
            await wrong.shutdown().catch(() => {});
          } finally {
            for (const c of [bad, reader, none]) c.close();
          }
        },
      );

      await t.step(
        "bad frames and unknown RPCs get a status; the server keeps serving",
        async () => {
          const raw = connectRaw(endpoints, ADMIN);
          try {
            await assert.rejects(
              rawCall(raw, "syncLiteSubscription", {}),
              (e: { code?: number }) => e.code === 12,
            );
            await assert.rejects(
              rawCall(raw, "bogus", {}),
              (e: { code?: number }) => e.code === 12,
            );
            await assert.rejects(
              rawCall(raw, "garbage", {}),
              (e: { code?: number }) => e.code !== undefined && e.code !== 0,
            );
            const route = await rawCall(raw, "queryRoute", { topic: { name: "Orders" } }) as {
              status: { code: number };
              messageQueues: { id: number; permission: number }[];
            };
            assert.equal(route.status.code, 20000);
            assert.equal(route.messageQueues[0].id, 0);
            assert.equal(route.messageQueues[0].permission, 4, "queue 0 is READ_WRITE");
            const missing = await rawCall(raw, "queryRoute", { topic: { name: "Nope" } }) as {
              status: { code: number };
            };
            assert.equal(missing.status.code, 40402);
            // QueryOffset by TIMESTAMP reads the core's time index: the epoch is the queue's
            // start, an hour ahead its end.
            const offsetAt = async (id: number, policy: number, seconds?: number) => {
              const r = await rawCall(raw, "queryOffset", {
                messageQueue: { topic: { name: "Orders" }, id },
                queryOffsetPolicy: policy,
                ...(seconds === undefined ? {} : { timestamp: { seconds, nanos: 0 } }),
              }) as { status: { code: number }; offset: number };
              assert.equal(r.status.code, 20000, JSON.stringify(r.status));
              return Number(r.offset);
            };
            let checked = 0;
            for (const id of [0, 1]) {
              const [begin, end] = [await offsetAt(id, 0), await offsetAt(id, 1)];
              if (end === begin) continue;
              assert.equal(await offsetAt(id, 2, 0), begin);
              assert.equal(await offsetAt(id, 2, Math.floor(Date.now() / 1000) + 3600), end);
              checked++;
            }
            assert.ok(checked > 0, "an Orders queue holds messages");
          } finally {
            raw.close();
          }
        },
      );

      await t.step("clients that close after many calls leave the server serving", async () => {
        // Deno 2.9.6's node:http2 server aborted here (functions/grpc/goaway_shield.ts).
        const script = new URL("./support/grpc_goaway_client.mjs", import.meta.url).pathname;
        const out = await new Promise<string>((resolve, reject) => {
          execFile(
            "node",
            [script, endpoints, "3", "1200"],
            (err, stdout) => err ? reject(err) : resolve(stdout),
          );
        });
        assert.deepEqual(JSON.parse(out), { answered: 3600 });
        const raw = connectRaw(endpoints, ADMIN);
        try {
          const hb = await rawCall(raw, "heartbeat", { clientType: 1 }) as {
            status: { code: number };
          };
          assert.equal(hb.status.code, 20000);
        } finally {
          raw.close();
        }
      });

      await producer.shutdown();
      await b.stop();
    },
  });
}
