import assert from "node:assert/strict";
import { ConnectionTracker, type Tracked } from "./conn_guard.ts";

const LIMITS = { headerTimeoutMs: 1000, idleTimeoutMs: 5000, connectionsMax: 2 };
const bytes = (text: string) => new TextEncoder().encode(text);

/** A tracker on a manual clock, with the connections it closed. */
function setup() {
  let now = 0;
  const closed: string[] = [];
  const tracker = new ConnectionTracker(LIMITS, { nowMs: () => now, sweepTimer: false });
  const open = (name: string): Tracked => {
    const c = tracker.admit(() => {
      closed.push(name);
      tracker.release(c!);
    });
    assert.ok(c);
    return c;
  };
  const at = (ms: number) => {
    now = ms;
    tracker.sweep();
  };
  return { tracker, open, at, closed };
}

Deno.test("ConnectionTracker closes a head that is not complete within headerTimeoutMs", () => {
  const { tracker, open, at, closed } = setup();
  const c = open("slow");
  tracker.fromClient(c, bytes("GET / HTTP/1.1\r\nHost: x\r\n"));
  at(999);
  assert.deepEqual(closed, []);
  at(1000);
  assert.deepEqual(closed, ["slow"]);
});

Deno.test("ConnectionTracker finds the end of a head split across chunks and holds it in flight", () => {
  const { tracker, open, at, closed } = setup();
  const c = open("poll");
  for (const part of ["GET /poll HTTP/1.1\r\nHost: x\r", "\n\r", "\n"]) {
    tracker.fromClient(c, bytes(part));
  }
  assert.equal(c.state, "inFlight");
  at(60_000); // a long poll: no deadline while in flight
  assert.deepEqual(closed, []);
  tracker.fromUpstream(c, bytes("HTTP/1.1 200 OK\r\n"));
  at(64_999);
  assert.deepEqual(closed, []);
  at(65_000); // idleTimeoutMs after the last byte of the answer
  assert.deepEqual(closed, ["poll"]);
});

Deno.test("ConnectionTracker keeps a request in flight after 100 Continue", () => {
  const { tracker, open, at, closed } = setup();
  const c = open("upload");
  tracker.fromClient(c, bytes("POST /m HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"));
  tracker.fromUpstream(c, bytes("HTTP/1.1 100 Continue\r\n\r\n"));
  assert.equal(c.state, "inFlight");
  tracker.fromClient(c, bytes("body without a blank line"));
  at(30_000);
  assert.deepEqual(closed, []);
});

Deno.test("ConnectionTracker refuses past connectionsMax and counts a closed one out", async () => {
  const { tracker, open, closed } = setup();
  const a = open("a");
  const b = open("b");
  assert.equal(tracker.admit(() => {}), undefined);
  a.destroy();
  assert.equal(tracker.open, 1);
  const empty = tracker.whenEmpty();
  b.destroy();
  await empty; // never resolving fails the test: Deno reports the pending promise
  assert.equal(tracker.open, 0);
  assert.deepEqual(closed, ["a", "b"]);
});
