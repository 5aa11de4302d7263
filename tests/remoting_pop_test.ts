// POP over the RocketMQ remoting protocol (POP_MESSAGE 200050, ACK_MESSAGE 200051,
// CHANGE_MESSAGE_INVISIBLETIME 200053) in real broker processes on Deno and Bun, driven by a
// bare protocol client that builds extraInfo from the answer as a 5.x client does
// (startOffsetInfo / msgOffsetInfo, popTime, invisibleTime, reviveQid).
import assert from "node:assert/strict";
import { RUNTIMES } from "./harness/process.ts";
import { type BrokerProcess, startBroker } from "./harness/broker.ts";
import { RawRemoting } from "./support/remoting_client.ts";
import { RequestCode, ResponseCode } from "../functions/remoting/codes.ts";
import type { RemotingCommand } from "../functions/remoting/codec.ts";
import { parseRecord } from "../storage/message/record_decode.ts";

interface Popped {
  topic: string;
  body: string;
  tag: string | undefined;
  queueId: number;
  queueOffset: number;
  reconsumeTimes: number;
  storePort: number;
  /** As MQClientAPIImpl builds it: the client echoes this on ACK and change. */
  extraInfo: string;
}

function remotingAddress(b: BrokerProcess): string {
  const line = b.child.lines.find((l) => l.includes('"event":"listening"'))!;
  return JSON.parse(line).remoting;
}

/** The records of a POP answer with the extraInfo a client derives for each. */
export function popped(answer: RemotingCommand, brokerName = "broker-a"): Popped[] {
  const h = answer.extFields;
  const table = (text: string) =>
    new Map(
      text.split(";").map((part) => {
        const [retry, queueId, value] = part.split(" ");
        return [`${retry}@${queueId}`, value];
      }),
    );
  const starts = table(h.startOffsetInfo);
  const offsets = table(h.msgOffsetInfo);
  const out: Popped[] = [];
  const bytes = answer.body!;
  for (let at = 0; at < bytes.length;) {
    const r = parseRecord(bytes, at, { checkCrc: true });
    assert.equal(r.kind, "record");
    if (r.kind !== "record") break;
    at += r.size;
    const m = r.record;
    const key = `${m.topic.startsWith("%RETRY%") ? 1 : 0}@${m.queueId}`;
    assert.ok(starts.has(key), `startOffsetInfo has no ${key}: ${h.startOffsetInfo}`);
    assert.ok(
      offsets.get(key)!.split(",").includes(String(m.queueOffset)),
      `msgOffsetInfo ${h.msgOffsetInfo} lacks ${key} ${m.queueOffset}`,
    );
    out.push({
      topic: m.topic,
      body: new TextDecoder().decode(m.body),
      tag: m.properties.get("TAGS"),
      queueId: m.queueId,
      queueOffset: m.queueOffset,
      reconsumeTimes: m.reconsumeTimes,
      storePort: m.storeHost.port,
      extraInfo: [
        starts.get(key),
        h.popTime,
        h.invisibleTime,
        h.reviveQid,
        key[0],
        brokerName,
        m.queueId,
        m.queueOffset,
      ].join(" "),
    });
  }
  return out;
}

for (const runtime of RUNTIMES) {
  Deno.test(`remoting POP on ${runtime}: pop with a tag expression, ack, change invisible time, an unacked message comes back with a higher reconsume count`, async () => {
    await using broker = await startBroker(runtime, { env: { MQ_DEFAULT_TOPIC_QUEUES: "2" } });
    const mq = broker.client;
    await mq.upsertTopic("PopT", { readQueueNums: 2, writeQueueNums: 2 });
    for (const [body, tag] of [["m1", "A"], ["m2", "A"], ["m3", "B"], ["m4", "C"]]) {
      await mq.produce("PopT", { body, tag });
    }
    const conn = await RawRemoting.connect(remotingAddress(broker));
    try {
      const R = RequestCode;
      const group = "pop-g";
      const pop = (invisibleTime: number, pollTime: number) =>
        conn.request(
          R.POP_MESSAGE,
          {
            consumerGroup: group,
            topic: "PopT",
            queueId: -1,
            maxMsgNums: 32,
            invisibleTime,
            pollTime,
            bornTime: Date.now(),
            initMode: 0,
            expType: "TAG",
            exp: "A || C",
          },
          undefined,
          { timeoutMs: pollTime + 10_000 },
        );
      const ack = (m: Popped) =>
        conn.request(R.ACK_MESSAGE, {
          consumerGroup: group,
          topic: "PopT",
          queueId: m.queueId,
          extraInfo: m.extraInfo,
          offset: m.queueOffset,
        });

      // m3 (tag B) is never handed out: the broker acks it on the client's behalf.
      const got: Popped[] = [];
      for (let i = 0; i < 20 && got.length < 3; i++) {
        const answer = await pop(60_000, 500);
        if (answer.code === ResponseCode.SUCCESS) got.push(...popped(answer));
        else assert.equal(answer.code, ResponseCode.PULL_NOT_FOUND, answer.remark);
      }
      assert.deepEqual(got.map((m) => m.body).sort(), ["m1", "m2", "m4"]);
      assert.ok(got.every((m) => m.reconsumeTimes === 0 && m.topic === "PopT"));
      // Records name the remoting port as their store host (offset message ids dial it).
      const port = Number(remotingAddress(broker).split(":")[1]);
      assert.deepEqual(got.map((m) => m.storePort), [port, port, port]);
      const by = (b: string) => got.find((m) => m.body === b)!;

      // ACK: once; the second time the receipt is gone (NO_MESSAGE).
      assert.equal((await ack(by("m1"))).code, ResponseCode.SUCCESS);
      assert.equal((await ack(by("m1"))).code, ResponseCode.NO_MESSAGE);
      assert.equal((await ack(by("m4"))).code, ResponseCode.SUCCESS);
      const bad = await conn.request(R.ACK_MESSAGE, {
        consumerGroup: group,
        topic: "PopT",
        queueId: 0,
        extraInfo: "not an extra info",
        offset: 0,
      });
      assert.notEqual(bad.code, ResponseCode.SUCCESS);

      // CHANGE_MESSAGE_INVISIBLETIME: m2 comes back in 300 ms instead of 60 s; the receipt
      // moves to the new popTime (the old extraInfo is refused).
      const m2 = by("m2");
      const changed = await conn.request(R.CHANGE_MESSAGE_INVISIBLETIME, {
        consumerGroup: group,
        topic: "PopT",
        queueId: m2.queueId,
        extraInfo: m2.extraInfo,
        offset: m2.queueOffset,
        invisibleTime: 300,
      });
      assert.equal(changed.code, ResponseCode.SUCCESS, changed.remark);
      assert.ok(Number(changed.extFields.popTime) > Number(m2.extraInfo.split(" ")[1]));
      assert.equal((await ack(m2)).code, ResponseCode.NO_MESSAGE);

      // Not acked: it comes back from %RETRY%pop-g with reconsumeTimes 1.
      let back: Popped | undefined;
      for (let i = 0; i < 20 && !back; i++) {
        const answer = await pop(60_000, 1000);
        if (answer.code === ResponseCode.SUCCESS) back = popped(answer)[0];
      }
      assert.ok(back, "m2 did not come back");
      assert.equal(back.body, "m2");
      assert.equal(back.reconsumeTimes, 1);
      assert.equal(back.topic, `%RETRY%${group}`);
      assert.equal((await ack(back)).code, ResponseCode.SUCCESS);
      const none = await pop(60_000, 300);
      assert.equal(none.code, ResponseCode.PULL_NOT_FOUND, none.remark);
    } finally {
      await conn.close();
    }
  });
}
