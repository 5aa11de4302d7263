import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { signatureHeader, SigningKey } from "./signing.ts";

const enc = new TextEncoder();

Deno.test("SigningKey.sign() equals createHmac for keys shorter, equal to and longer than a block", () => {
  const bodies = [new Uint8Array(0), enc.encode("{}"), new Uint8Array(1024).fill(109)];
  for (const length of [1, 24, 32, 63, 64, 65, 100]) {
    const key = new Uint8Array(length).map((_, i) => (i * 37 + length) & 0xff);
    const signing = new SigningKey(key);
    for (const body of bodies) {
      const prefix = `msg_${length}.1700000000.`;
      const expected = createHmac("sha256", key).update(prefix).update(body).digest("base64");
      assert.equal(signing.sign(prefix, body), expected);
      assert.equal(signing.sign(prefix, body), expected); // the key's state is not consumed
    }
  }
});

Deno.test("signatureHeader() gives the same header for raw keys and SigningKeys, space-separated", () => {
  const keys = [new Uint8Array(32).fill(1), new Uint8Array(24).fill(2)];
  const body = enc.encode('{"a":1}');
  const raw = signatureHeader(keys, "msg_1", 1700000000, body);
  const ready = signatureHeader(keys.map((k) => new SigningKey(k)), "msg_1", 1700000000, body);
  assert.equal(ready, raw);
  assert.equal(raw.split(" ").length, 2);
  assert.ok(raw.split(" ").every((s) => s.startsWith("v1,")));
});
