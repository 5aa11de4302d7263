// Linger while busy (produce_coalescer.ts, clusterProduceCoalesceInFlightMax): while a lane's
// calls in flight are at the cap, new produces wait in the open batch and go when one comes
// back; an idle lane sends at the end of the turn; the caps still send at once.
import assert from "node:assert/strict";
import { BrokerError } from "../protocol/errors.ts";
import type { BatchItemResult, ProduceMessage, ProduceResult } from "../protocol/types.ts";
import { type CoalesceSettings, ProduceCoalescer } from "./produce_coalescer.ts";
import type { GroupLink } from "./route_source.ts";

const body = new Uint8Array(10);
/** The coalescer's end-of-turn callbacks, run by `turn()` after the turn's promise jobs:
 * setTimeout(0) and setImmediate order is not fixed under load (a CI run saw it flip). */
const ends: (() => void)[] = [];
const schedule = (f: () => void) => void ends.push(f);
const settle = () => new Promise((r) => setTimeout(r, 0));
const turn = async () => {
  await settle();
  for (const f of ends.splice(0)) f();
  await settle();
};

/** A group whose calls stay in flight until the test lets them go (release / fail). */
function heldLink() {
  const calls: { kind: "single" | "batch"; messages: ProduceMessage[] }[] = [];
  const pending: { ok: () => void; fail: (err: unknown) => void }[] = [];
  let n = 0;
  const answer = (topic: string): ProduceResult => ({
    messageId: `id-${n}`,
    topic,
    queueId: 0,
    queueOffset: n++,
    commitLogOffset: 0,
    storeTimestamp: 0,
    durability: "WRITTEN",
  });
  const hold = <T>(value: () => T) =>
    new Promise<T>((resolve, reject) => pending.push({ ok: () => resolve(value()), fail: reject }));
  const client = {
    produce(topic: string, m: ProduceMessage) {
      calls.push({ kind: "single", messages: [m] });
      return hold(() => answer(topic));
    },
    produceBatch(topic: string, ms: ProduceMessage[]) {
      calls.push({ kind: "batch", messages: ms });
      return hold(() => ms.map((): BatchItemResult => ({ ok: true, ...answer(topic) })));
    },
  };
  const link = { name: "g", url: "http://g.test", epoch: 0, client } as unknown as GroupLink;
  return {
    link,
    calls,
    release: () => pending.shift()!.ok(),
    fail: (e: unknown) => pending.shift()!.fail(e),
  };
}

const settings = (over: Partial<CoalesceSettings> = {}): CoalesceSettings => ({
  clusterProduceCoalesceEnable: true,
  clusterProduceCoalesceItemsMax: 64,
  clusterProduceCoalesceBytesMax: 1024,
  clusterProduceCoalesceInFlightMax: 1,
  ...over,
});

Deno.test("linger: while a call is in flight the next batch grows, and goes when it returns", async () => {
  const g = heldLink();
  const co = new ProduceCoalescer(settings(), schedule);
  const first = co.produce(g.link, "t", { body, tag: "a" });
  await turn();
  assert.equal(g.calls.length, 1, "an idle lane sends at the end of the turn");
  const later = [1, 2, 3].map((i) => co.produce(g.link, "t", { body, tag: `b${i}` }));
  await turn();
  const more = [4, 5].map((i) => co.produce(g.link, "t", { body, tag: `b${i}` }));
  await turn();
  assert.equal(g.calls.length, 1, "nothing more goes while the cap's call is in flight");
  g.release();
  assert.equal((await first).queueOffset, 0);
  assert.equal(g.calls.length, 2);
  assert.deepEqual(g.calls[1].messages.map((m) => m.tag), ["b1", "b2", "b3", "b4", "b5"]);
  g.release();
  const answers = await Promise.all([...later, ...more]);
  assert.deepEqual(answers.map((r) => r.queueOffset), [1, 2, 3, 4, 5], "each its own item");
  assert.equal(co.batches, 1);
  // Idle again: the next produce goes at the end of its turn.
  const again = co.produce(g.link, "t", { body });
  await turn();
  assert.equal(g.calls.length, 3);
  g.release();
  await again;
  // Other topics are other lanes.
  const t1 = co.produce(g.link, "t1", { body });
  const t2 = co.produce(g.link, "t2", { body });
  await turn();
  assert.equal(g.calls.length, 5, "one lane per topic");
  g.release();
  g.release();
  await Promise.all([t1, t2]);
});

Deno.test("linger: the item and byte caps send at once, a failure ends the wait, 0 never lingers", async () => {
  const g = heldLink();
  const co = new ProduceCoalescer(settings({ clusterProduceCoalesceItemsMax: 3 }), schedule);
  const first = co.produce(g.link, "t", { body });
  await turn();
  const full = [1, 2, 3, 4].map(() => co.produce(g.link, "t", { body }));
  assert.equal(g.calls.length, 2, "the item cap sends though a call is in flight");
  assert.equal(g.calls[1].messages.length, 3);
  await turn();
  assert.equal(g.calls.length, 2, "the fourth lingers");
  g.fail(new BrokerError("INTERNAL", "down"));
  await assert.rejects(first, (e) => e instanceof BrokerError);
  assert.equal(g.calls.length, 2, "the full batch is still in flight");
  g.release();
  await turn();
  assert.equal(g.calls.length, 3, "every call back: the lingering one goes");
  assert.equal(g.calls[2].kind, "single");
  g.release();
  assert.equal((await Promise.all(full)).length, 4);

  const bytes = heldLink();
  const small = new ProduceCoalescer(settings({ clusterProduceCoalesceBytesMax: 25 }), schedule);
  const a = small.produce(bytes.link, "t", { body });
  await turn();
  const b = [1, 2, 3].map(() => small.produce(bytes.link, "t", { body }));
  assert.equal(bytes.calls.length, 2, "20 + 10 bytes would pass 25: the open batch goes");
  assert.equal(bytes.calls[1].messages.length, 2);
  bytes.release();
  bytes.release();
  await turn();
  assert.equal(bytes.calls.length, 3, "the third went when the calls came back");
  bytes.release();
  await Promise.all([a, ...b]);

  const off = heldLink();
  const never = new ProduceCoalescer(settings({ clusterProduceCoalesceInFlightMax: 0 }), schedule);
  const x = never.produce(off.link, "t", { body });
  await turn();
  const y = never.produce(off.link, "t", { body });
  await turn();
  assert.equal(off.calls.length, 2, "0: every turn's batch goes");
  off.release();
  off.release();
  await Promise.all([x, y]);
});
