// Bodies on the wire: base64 both ways over every byte value and a body past one chunk.
import assert from "node:assert/strict";
import { base64, fromBase64, messageBody } from "./body.ts";

Deno.test("base64 and fromBase64 agree with btoa/atob on every byte value", () => {
  const bytes = new Uint8Array(10_000).map((_, i) => (i * 7 + 3) & 0xff);
  let latin1 = "";
  for (const b of bytes) latin1 += String.fromCharCode(b);
  const text = base64(bytes);
  assert.equal(text, btoa(latin1));
  assert.deepEqual(fromBase64(text), bytes);
  assert.equal(base64(new Uint8Array(0)), "");
  const m = { body: text, bodyEncoding: "base64" } as Parameters<typeof messageBody>[0];
  assert.deepEqual(messageBody(m), bytes);
});
