import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { GoawayFilter } from "./goaway_shield.ts";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

function frame(type: number, payload: number[], stream = 0): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, Buffer.from(payload)]);
}

Deno.test("GoawayFilter.push() drops GOAWAY frames and keeps every other byte, however split", () => {
  const settings = frame(0x4, [0, 3, 0, 0, 0, 100]);
  const headers = frame(0x1, [1, 2, 3, 4, 5], 1);
  const goaway = frame(0x7, [0, 0, 0, 1, 0, 0, 0, 0]);
  const data = frame(0x0, Array.from({ length: 40 }, (_, i) => i), 1);
  const input = Buffer.concat([PREFACE, settings, headers, goaway, data]);
  const want = Buffer.concat([PREFACE, settings, headers, data]);
  for (const size of [1, 2, 5, 9, 10, 17, input.length]) {
    const filter = new GoawayFilter();
    const out: Uint8Array[] = [];
    for (let i = 0; i < input.length; i += size) out.push(filter.push(input.subarray(i, i + size)));
    assert.deepEqual(Buffer.concat(out), want, `chunks of ${size}`);
    assert.equal(filter.dropped, 1);
  }
});
