// PullHoldService: which held pulls a dispatch notice wakes, and that the holds of other
// topics and queues (kept by topic, then queue id) are neither woken nor leaked.
import assert from "node:assert/strict";
import { PullHoldService } from "./long_polling.ts";

/** What `p` settled to within 20 ms, else "pending". */
async function settled<T>(p: Promise<T>): Promise<T | "pending"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"pending">((r) => timer = setTimeout(() => r("pending"), 20));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("arriving wakes the holds of that queue past their offset, and queue -1 holds", async () => {
  const holds = new PullHoldService({ holdsMax: 100 });
  const q0 = holds.hold("a", 0, 5, 5000, undefined);
  const q0Later = holds.hold("a", 0, 9, 5000, undefined);
  const q1 = holds.hold("a", 1, 0, 5000, undefined);
  const anyQueue = holds.hold("a", -1, 0, 5000, undefined);
  const otherTopic = holds.hold("b", 0, 0, 5000, undefined);
  assert.equal(holds.held, 5);

  holds.arriving("a", 0, 7); // queue 0 now ends at 7: offset 5 is there, 9 is not
  assert.equal(await settled(q0), "arrived");
  assert.equal(await settled(anyQueue), "arrived");
  assert.equal(await settled(q0Later), "pending");
  assert.equal(await settled(q1), "pending");
  assert.equal(await settled(otherTopic), "pending");
  assert.equal(holds.held, 3);

  holds.arriving("c", 0, 100); // a topic nobody waits on
  holds.arriving("a", 2, 100); // a queue of "a" nobody waits on
  assert.equal(holds.held, 3);

  holds.arriving("a", 0, 10);
  assert.equal(await settled(q0Later), "arrived");
  holds.close();
  assert.equal(await settled(q1), "closed");
  assert.equal(await settled(otherTopic), "closed");
  assert.equal(holds.held, 0);
  assert.equal(holds.canHold(), false, "closed: no new holds");
});

Deno.test("a tag filter keeps a hold waiting; a timeout, an abort and a re-hold after emptying work", async () => {
  const holds = new PullHoldService({ holdsMax: 2 });
  const tagged = holds.hold("t", 3, 0, 5000, new Set([42]));
  holds.arriving("t", 3, 1, 7);
  assert.equal(await settled(tagged), "pending", "tag 7 is not wanted");
  holds.arriving("t", 3, 2, 42);
  assert.equal(await settled(tagged), "arrived");

  assert.equal(await holds.hold("t", 3, 0, 1, undefined), "timeout");
  const abort = new AbortController();
  const aborted = holds.hold("t", 3, 0, 5000, undefined, abort.signal);
  abort.abort();
  assert.equal(await settled(aborted), "closed");
  assert.equal(holds.held, 0);

  // The topic's emptied entries are gone, and a new hold there is woken as before.
  const again = holds.hold("t", 3, 0, 5000, undefined);
  const full = holds.hold("u", 0, 0, 5000, undefined);
  assert.equal(holds.canHold(), false, "holdsMax reached");
  holds.arriving("t", 3, 1);
  assert.equal(await settled(again), "arrived");
  assert.equal(holds.canHold(), true);
  holds.close();
  assert.equal(await full, "closed");
});
