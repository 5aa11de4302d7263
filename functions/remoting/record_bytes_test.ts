import assert from "node:assert/strict";
import { prepareRecord, stampRecord } from "../../storage/message/record.ts";
import { parseRecord } from "../../storage/message/record_decode.ts";
import { recordTopic, withReconsumeTimes, withTopic } from "./record_bytes.ts";

const host = { ip: new Uint8Array([127, 0, 0, 1]), port: 10911 };

function stored(topic: string) {
  const prepared = prepareRecord({
    topic,
    queueId: 0,
    body: new TextEncoder().encode("hello"),
    properties: new Map([["REAL_TOPIC", "Orders"], ["UNIQ_KEY", "id-1"]]),
    bornTimestamp: 1,
    bornHost: host,
    storeHost: host,
  }, 1 << 20);
  stampRecord(new DataView(prepared.bytes.buffer), 0, 7, 0, 2);
  return prepared.bytes;
}

Deno.test("record_bytes: topic and queue swapped (V1 and V2 names), reconsume count set, on copies", () => {
  const half = stored("RMQ_SYS_TRANS_HALF_TOPIC");
  assert.equal(recordTopic(half), "RMQ_SYS_TRANS_HALF_TOPIC");
  for (const topic of ["Orders", "x".repeat(200)]) {
    const out = withTopic(half, topic, 3);
    const r = parseRecord(out, 0, { checkCrc: true });
    assert.equal(r.kind, "record");
    if (r.kind !== "record") continue;
    assert.equal(r.record.topic, topic);
    assert.equal(r.record.queueId, 3);
    assert.equal(r.record.queueOffset, 7);
    assert.equal(r.record.properties.get("UNIQ_KEY"), "id-1");
    assert.equal(new TextDecoder().decode(r.record.body), "hello");
    assert.equal(recordTopic(out), topic);
  }
  const again = withReconsumeTimes(half, 4);
  const r = parseRecord(again, 0, { checkCrc: true });
  assert.ok(r.kind === "record" && r.record.reconsumeTimes === 4);
  assert.equal(recordTopic(half), "RMQ_SYS_TRANS_HALF_TOPIC", "the stored bytes are untouched");
});
