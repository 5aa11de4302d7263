// Transactions over RocketMQ remoting (issue #23) with real broker processes under Deno and
// Bun and a bare remoting connection: a half message sent with sysFlag TRANSACTION_PREPARED
// is invisible until END_TRANSACTION commits it; an orphan is asked with
// CHECK_TRANSACTION_STATE on the producer's connection (registered by its heartbeat), the
// half record in the body, and the producer's END_TRANSACTION (fromTransactionCheck) rolls
// it back.
import assert from "node:assert/strict";
import { TransactionClient } from "../client/transactions.ts";
import { RequestCode } from "../functions/remoting/codes.ts";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";
import { RawRemoting } from "./support/remoting_client.ts";
import { parseRecord } from "../storage/message/record_decode.ts";

const TOPIC = "RmqTx";
const enc = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function half(raw: RawRemoting, body: string) {
  return raw.request(RequestCode.SEND_MESSAGE_V2, {
    a: "rpg",
    b: TOPIC,
    c: "TBW102",
    d: 4,
    e: -1,
    f: 4, // TRANSACTION_PREPARED
    g: Date.now(),
    h: 0,
    i: "TRAN_MSG\u0001true\u0002PGROUP\u0001rpg\u0002KEYS\u0001k1\u0002",
    j: 0,
    k: "false",
  }, enc.encode(body));
}

function end(raw: RawRemoting, id: string, kind: 8 | 12, fromCheck = false) {
  return raw.request(RequestCode.END_TRANSACTION, {
    producerGroup: "rpg",
    tranStateTableOffset: 0,
    commitLogOffset: 0,
    commitOrRollback: kind,
    fromTransactionCheck: String(fromCheck),
    msgId: id,
    transactionId: id,
  });
}

for (const runtime of RUNTIMES) {
  Deno.test(`transactions over remoting on ${runtime}: half, END_TRANSACTION, CHECK_TRANSACTION_STATE`, async () => {
    await using b = await startBroker(runtime, {
      env: { MQ_TRANSACTION_TIMEOUT_MS: "300", MQ_TRANSACTION_CHECK_INTERVAL_MS: "100" },
    });
    const line = b.child.lines.find((l) => l.includes('"event":"listening"'))!;
    const remoting = JSON.parse(line).remoting as string;
    await b.client.upsertTopic(TOPIC, { readQueueNums: 4, writeQueueNums: 4 });
    const tx = new TransactionClient({ baseUrl: b.url });
    const raw = await RawRemoting.connect(remoting);
    try {
      const beat = await raw.request(
        RequestCode.HEART_BEAT,
        {},
        enc.encode(JSON.stringify({
          clientID: "p1",
          producerDataSet: [{ groupName: "rpg" }],
          consumerDataSet: [],
        })),
      );
      assert.equal(beat.code, 0, beat.remark);
      // A committed half message is delivered once, with its keys.
      const sent = await half(raw, "half-1");
      assert.equal(sent.code, 0, sent.remark);
      const id1 = sent.extFields.transactionId;
      assert.equal((await tx.getTransaction(id1)).state, "PREPARED");
      const ended = await end(raw, id1, 8);
      assert.equal(ended.code, 0, ended.remark);
      const view = await tx.getTransaction(id1);
      assert.equal(view.state, "COMMITTED");
      const got = await b.client.pull(TOPIC, view.queueId, { offset: 0 });
      assert.deepEqual(got.messages.map((m) => [m.body, m.keys]), [["half-1", ["k1"]]]);
      // An orphan is asked on this connection; the producer rolls it back.
      const id2 = (await half(raw, "half-2")).extFields.transactionId;
      let check;
      for (const deadline = performance.now() + 10_000; !check;) {
        assert.ok(performance.now() < deadline, "no CHECK_TRANSACTION_STATE came");
        check = raw.notices.find((n) =>
          n.code === RequestCode.CHECK_TRANSACTION_STATE && n.extFields.transactionId === id2
        );
        if (!check) await sleep(20);
      }
      const record = new TextDecoder("latin1").decode(check.body);
      assert.ok(record.includes("half-2"), "the check carries the half record");
      // Under its real topic and queue, as RocketMQ's broker sends it; UNIQ_KEY and PGROUP
      // (what the client reads) ride along.
      const parsed = parseRecord(check.body!, 0, { checkCrc: true });
      assert.ok(parsed.kind === "record", "the check body is one whole record");
      assert.equal(parsed.record.topic, TOPIC);
      assert.equal(parsed.record.properties.get("UNIQ_KEY"), id2);
      assert.equal(parsed.record.properties.get("PGROUP"), "rpg");
      assert.equal((await end(raw, id2, 12, true)).code, 0);
      assert.equal((await tx.getTransaction(id2)).state, "ROLLED_BACK");
    } finally {
      await raw.close();
    }
  });
}
