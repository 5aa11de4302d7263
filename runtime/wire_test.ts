// toWireMessage(): a body goes out as UTF-8 text when it is text, else as base64, and
// decodes back to the stored bytes either way.
import { PROPERTY_TAGS, PROPERTY_UNIQ_KEY } from "../storage/message/message_const.ts";
import assert from "node:assert/strict";
import { type MessageInput, prepareRecord } from "../storage/message/record.ts";
import { parseRecord } from "../storage/message/record_decode.ts";
import { fromBase64, toWireMessage } from "./wire.ts";
import { pickPlatform } from "./platform/pick.ts";

const platform = await pickPlatform();

const host = { ip: new Uint8Array([127, 0, 0, 1]), port: 1 };

function wire(body: Uint8Array) {
  const input: MessageInput = {
    topic: "T",
    queueId: 0,
    body,
    properties: new Map([[PROPERTY_UNIQ_KEY, "ID1"], [PROPERTY_TAGS, "a"], ["region", "eu"]]),
    bornTimestamp: 1,
    bornHost: host,
    storeHost: host,
  };
  const parsed = parseRecord(prepareRecord(input, 1 << 20).bytes, 0, { checkCrc: true });
  assert.equal(parsed.kind, "record");
  if (parsed.kind !== "record") throw new Error("unreachable");
  return toWireMessage(parsed.record, 7, platform.bodyText);
}

const bytesOf = (m: { body: string; bodyEncoding: string }) =>
  m.bodyEncoding === "base64" ? fromBase64(m.body) : new TextEncoder().encode(m.body);

Deno.test("toWireMessage() sends text as UTF-8 and anything else as base64, exactly", () => {
  const text = new TextEncoder().encode("héllo, wörld ✓");
  const m = wire(text);
  assert.equal(m.bodyEncoding, "utf8");
  assert.equal(m.body, "héllo, wörld ✓");
  assert.equal(m.messageId, "ID1");
  assert.equal(m.tag, "a");
  assert.deepEqual(m.properties, { region: "eu" });
  assert.equal(m.queueOffset, 7);

  for (const body of [new Uint8Array([0xff, 0x00, 0xc3]), new Uint8Array([0xe2, 0x82])]) {
    const b = wire(body);
    assert.equal(b.bodyEncoding, "base64");
    assert.deepEqual(bytesOf(b), body);
  }
  // Text holding U+FFFD goes out as base64 (README), and comes back as the same bytes.
  const replacement = new TextEncoder().encode("a\uFFFDb");
  assert.equal(wire(replacement).bodyEncoding, "base64");
  assert.deepEqual(bytesOf(wire(replacement)), replacement);
});
