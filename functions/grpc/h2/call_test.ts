// A lean call's deadline from grpc-timeout (gRPC over HTTP/2: up to 8 digits and a unit).
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { H2Call, MessageReader, timeoutMs } from "./call.ts";
import type { H2Stream } from "./stream.ts";

/** A stream that records the status it was finished with. */
function streamWith(timeout: string) {
  const finished: number[] = [];
  const stream = {
    headers: new Map([["grpc-timeout", timeout]]),
    finish: (code: number) => finished.push(code),
    release: () => {},
    message: () => {},
  } as unknown as H2Stream;
  return { stream, finished };
}

Deno.test("grpc-timeout: units, and bad values mean no deadline", () => {
  assert.equal(timeoutMs("100m"), 100);
  assert.equal(timeoutMs("5S"), 5000);
  assert.equal(timeoutMs("2M"), 120_000);
  assert.equal(timeoutMs("1H"), 3_600_000);
  assert.equal(timeoutMs("1000u"), 1);
  assert.equal(timeoutMs("123456789S"), Infinity, "more than 8 digits");
  assert.equal(timeoutMs("5x"), Infinity);
  assert.equal(timeoutMs(undefined), Infinity);
});

Deno.test("grpc-timeout: a short one ends the call, one beyond a timer's range does not", async () => {
  const short = streamWith("20m");
  const call = new H2Call(short.stream, () => new Uint8Array(), Date.now());
  let cancelled = false;
  call.on("cancelled", () => cancelled = true);
  // 99999999H is ~11 400 years; a single setTimeout of it would fire at once.
  const far = streamWith("99999999H");
  const farCall = new H2Call(far.stream, () => new Uint8Array(), Date.now());
  await new Promise((r) => setTimeout(r, 120));
  assert.deepEqual(short.finished, [4], "DEADLINE_EXCEEDED");
  assert.ok(cancelled, "the handler sees a cancelled call");
  assert.deepEqual(far.finished, [], "not ended by a far deadline");
  assert.ok(farCall.getDeadline() > Date.now() + 1e12);
  farCall.end();
  assert.deepEqual(far.finished, [0]);
});

Deno.test("message reader: split prefixes, several messages per chunk, large ones in linear time", () => {
  const inbound = { bytes: 0, max: 1 << 30 };
  const reader = new MessageReader(8 << 20, inbound);
  const msg = (n: number, fill: number) => {
    const b = Buffer.alloc(5 + n, fill);
    b[0] = 0;
    b.writeUInt32BE(n, 1);
    return b;
  };
  const out: Buffer[] = [];
  // Two messages and the first 3 bytes of a third's prefix in one chunk; then the rest.
  const three = Buffer.concat([msg(2, 1), msg(3, 2), msg(4, 3)]);
  assert.equal(reader.push(three.subarray(0, 17), out), undefined);
  assert.deepEqual(out.map((b) => [...b]), [[1, 1], [2, 2, 2]]);
  assert.ok(reader.partial);
  reader.push(three.subarray(17), out);
  assert.deepEqual([...out[2]], [3, 3, 3, 3]);
  assert.ok(!reader.partial);
  // 4 MiB in 1 KiB DATA pieces: joining at every piece copied ~8 GB (seconds); once is ms.
  const big = msg(4 << 20, 7);
  const started = performance.now();
  for (let at = 0; at < big.length; at += 1024) reader.push(big.subarray(at, at + 1024), out);
  const ms = performance.now() - started;
  assert.equal(out.length, 4);
  assert.equal(out[3].length, 4 << 20);
  assert.ok(ms < 500, `${ms.toFixed(0)} ms`);
  reader.settle();
  assert.equal(inbound.bytes, 0, "nothing held once the messages are out");
});
