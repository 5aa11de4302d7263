import assert from "node:assert/strict";
import { parseExtraInfo, PopHandles } from "./pop_handles.ts";

Deno.test("PopHandles: bounded, oldest forgotten first, unique popTimes, taken once", () => {
  let now = 1000;
  const h = new PopHandles(3, () => now);
  const t1 = h.nextPopTime();
  const t2 = h.nextPopTime();
  assert.ok(t2 > t1, "popTime is unique per answer within one millisecond");
  const key = (queueOffset: number, popTime = t1) => ({
    popTime,
    retry: false,
    queueId: 0,
    queueOffset,
  });
  for (let i = 0; i < 5; i++) h.remember("g", key(i), `h${i}`, now + 10_000);
  assert.equal(h.size, 3);
  assert.throws(() => h.take("g", key(0), false), /RECEIPT|No POP receipt/);
  assert.equal(h.take("g", key(4), true), "h4");
  assert.equal(h.take("g", key(4), false), "h4");
  assert.throws(() => h.take("g", key(4), false));
  assert.throws(() => h.take("other", key(3), false), "keys are per group");
  // Long past its invisible time (plus grace), an entry is swept on the next insert.
  now += 10_000 + 60_001;
  h.remember("g", key(9, t2), "h9", now + 1000);
  assert.equal(h.size, 1);
});

Deno.test("parseExtraInfo reads the client's layout and refuses junk", () => {
  assert.deepEqual(parseExtraInfo("5 1700000000000 60000 0 1 broker-a 3 17"), {
    popTime: 1700000000000,
    retry: true,
    queueId: 3,
    queueOffset: 17,
  });
  assert.equal(parseExtraInfo("5 1 60000 0 0 broker-a 3", 9).queueOffset, 9);
  assert.throws(() => parseExtraInfo("a b c"), /extraInfo/);
});
