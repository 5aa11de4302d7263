// An idle broker gives memory back (runtime/idle_gc.ts): on Deno started as `deno task
// start` starts it (--expose-gc), one memory-reducing collection runs once the broker has
// worked and then gone quiet, shown by mq_idle_gc_total; without the flag, with
// MQ_IDLE_GC_MS=0, and on Bun (whose collector returns memory on its own) none runs.
import assert from "node:assert/strict";
import { type BrokerProcess, startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

async function counter(broker: BrokerProcess, name: string): Promise<number> {
  const text = await (await fetch(`${broker.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is missing from /metrics`);
  return Number(line.split(" ")[1]);
}

/** Some work: 200 produces. */
async function work(broker: BrokerProcess) {
  for (let i = 0; i < 200; i++) {
    const r = await fetch(`${broker.url}/v1/topics/idle/messages`, { method: "POST", body: "x" });
    assert.equal(r.status, 201, await r.text());
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls mq_idle_gc_total (every 400 ms: at most two reads a 500 ms window, well under the
 * 2% that would count as work) until it passes `above`, for up to `ms`. */
async function collectionsAbove(broker: BrokerProcess, above: number, ms: number) {
  const until = Date.now() + ms;
  let n = await counter(broker, "mq_idle_gc_total");
  while (n <= above && Date.now() < until) {
    await sleep(400);
    n = await counter(broker, "mq_idle_gc_total");
  }
  return n;
}

Deno.test("deno, started as deno task start: an idle broker collects once, and again after work", async () => {
  await using broker = await startBroker("deno", {
    startTaskFlags: true,
    env: { MQ_IDLE_GC_MS: "500", MQ_IDLE_GC_INTERVAL_MS: "1" },
  });
  await work(broker);
  // A busy window, then an idle one: ~1 s; a loaded machine may delay the timers.
  const first = await collectionsAbove(broker, 0, 8000);
  assert.ok(first >= 1, `no idle collection after 8 s quiet: ${first}`);
  assert.ok(await counter(broker, "mq_idle_gc_last_seconds") > 0);
  // Quiet stays quiet: a collection is not work that arms the next one (five windows; the
  // broker's own timers may arm one more at most).
  await sleep(2500);
  const quiet = await counter(broker, "mq_idle_gc_total");
  assert.ok(quiet <= first + 1, `collections while quiet: ${first} -> ${quiet}`);
  await work(broker);
  const after = await collectionsAbove(broker, quiet, 8000);
  assert.ok(after > quiet, `work did not re-arm it: ${quiet} -> ${after}`);
});

for (const runtime of RUNTIMES) {
  const cases: [string, Record<string, string>, boolean][] = runtime === "deno"
    ? [["without --expose-gc", {}, false], ["with MQ_IDLE_GC_MS=0", { MQ_IDLE_GC_MS: "0" }, true]]
    : [["on its own collector", {}, false]];
  for (const [what, env, startTaskFlags] of cases) {
    Deno.test(`${runtime} ${what}: no idle collection`, async () => {
      await using broker = await startBroker(runtime, {
        startTaskFlags,
        env: { MQ_IDLE_GC_INTERVAL_MS: "1", ...env },
      });
      await work(broker);
      await sleep(1500); // a busy window and two idle ones
      assert.equal(await counter(broker, "mq_idle_gc_total"), 0);
    });
  }
}
