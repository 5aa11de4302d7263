// A lean call's deadline from grpc-timeout (gRPC over HTTP/2: up to 8 digits and a unit).
import assert from "node:assert/strict";
import { H2Call, timeoutMs } from "./call.ts";
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
