import assert from "node:assert/strict";
import { BodyDeadlines, readBody } from "./body.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";

const never = () => new Promise<never>(() => {});
const code = (p: Promise<unknown>) =>
  p.then(() => "resolved", (err) => err instanceof BrokerError ? err.code : String(err));

Deno.test("BodyDeadlines.race() passes values through and times out each stuck read", async () => {
  const deadlines = new BodyDeadlines(30, () => performance.now());
  assert.equal(await deadlines.race(Promise.resolve(7)), 7);
  await assert.rejects(deadlines.race(Promise.reject(new Error("boom"))), /boom/);
  const started = performance.now();
  const first = code(deadlines.race(never()));
  const done = deadlines.race(new Promise((r) => setTimeout(() => r("late"), 5)));
  await new Promise((r) => setTimeout(r, 10));
  // Starts after the first: the timer re-arms for it once the first has expired.
  const second = code(deadlines.race(never()));
  // The timer is unref'd (a socket keeps a server alive): this one keeps the test alive.
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(await done, "late");
  assert.equal(await first, "REQUEST_TIMEOUT");
  assert.equal(await second, "REQUEST_TIMEOUT");
  assert.ok(performance.now() - started >= 30 + 10 - 1);
});

Deno.test("readBody() reads a declared body whole and an undeclared one by chunks", async () => {
  const deadlines = new BodyDeadlines(1000, () => performance.now());
  const declared = new Request("http://x/", {
    method: "POST",
    body: "abc",
    headers: { "content-length": "3" },
  });
  assert.deepEqual(await readBody(declared, 10, deadlines), new TextEncoder().encode("abc"));
  const empty = new Request("http://x/", { method: "POST", headers: { "content-length": "0" } });
  assert.equal((await readBody(empty, 10, deadlines)).length, 0);
  const streamed = new Request("http://x/", {
    method: "POST",
    body: new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode("ab"));
        c.enqueue(new TextEncoder().encode("cd"));
        c.close();
      },
    }),
  });
  assert.deepEqual(await readBody(streamed, 10, deadlines), new TextEncoder().encode("abcd"));
  const tooLong = new Request("http://x/", {
    method: "POST",
    body: "x".repeat(11),
    headers: { "content-length": "11" },
  });
  assert.equal(await code(readBody(tooLong, 10, deadlines)), "PAYLOAD_TOO_LARGE");
  deadlines.close();
});

Deno.test("readBody() answers a body that fails midway with BODY_INCOMPLETE, not an internal error", async () => {
  const deadlines = new BodyDeadlines(1000, () => performance.now());
  const failing = () =>
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("ab"));
        c.error(new Error("connection reset by peer"));
      },
    });
  const declared = new Request("http://x/", {
    method: "POST",
    body: failing(),
    headers: { "content-length": "10" },
  });
  const streamed = new Request("http://x/", { method: "POST", body: failing() });
  for (const request of [declared, streamed]) {
    const err = await readBody(request, 100, deadlines).then(() => undefined, (e) => e);
    assert.ok(err instanceof BrokerError, String(err));
    assert.equal(err.code, "BODY_INCOMPLETE");
    assert.equal(err.status, 400);
    assert.match(err.message, /connection reset by peer/);
  }
  deadlines.close();
});
