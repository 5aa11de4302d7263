import assert from "node:assert/strict";
import type { BrokerClient } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { AutoRenew } from "./renew.ts";

function fixture(options: { heldMax?: number; maxMs?: number } = {}) {
  const nacks: [string, string, number | undefined][] = [];
  const gone = new Set<string>();
  let now = 1_000_000;
  const broker = {
    nack: (group: string, handle: string, delayMs?: number) => {
      if (gone.has(handle)) return Promise.reject(new BrokerError("INVALID_PARAMETER", "gone"));
      nacks.push([group, handle, delayMs]);
      return Promise.resolve();
    },
  } as unknown as BrokerClient;
  const renew = new AutoRenew({
    api: { get: () => Promise.resolve(broker), failed: () => {}, call: (f) => f(broker) },
    log: () => {},
    nowMs: () => now,
    leaseMs: 1000,
    maxMs: options.maxMs ?? 60_000,
    heldMax: options.heldMax ?? 100,
  });
  return { renew, nacks, gone, advance: (ms: number) => now += ms };
}

const ticks = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("AutoRenew renews held messages when half the lease is left, until released", async () => {
  const { renew, nacks, advance } = fixture();
  try {
    renew.hold("g", "c1", ["h1", "h2"], 1000);
    await ticks(150);
    assert.equal(nacks.length, 0, "not before half the lease");
    advance(600);
    await ticks(200);
    assert.deepEqual(nacks.sort(), [["g", "h1", 1000], ["g", "h2", 1000]]);
    renew.release("h1");
    advance(600);
    await ticks(200);
    assert.deepEqual(nacks.slice(2), [["g", "h2", 1000]], "h1 released, h2 renewed again");
  } finally {
    renew.close();
  }
});

Deno.test("AutoRenew drops refused handles, terminated clients, old messages, and over the cap", async () => {
  const { renew, nacks, gone, advance } = fixture({ heldMax: 3, maxMs: 2000 });
  try {
    renew.hold("g", "c1", ["a", "b"], 1000);
    renew.hold("g", "c2", ["c", "d"], 1000);
    assert.equal(renew.size, 3, "the cap holds");
    gone.add("a");
    renew.releaseClient("c2");
    advance(600);
    await ticks(200);
    assert.deepEqual(nacks, [["g", "b", 1000]]);
    assert.equal(renew.size, 1, "a refused, c2's released");
    advance(2000);
    await ticks(200);
    assert.equal(renew.size, 0, "past maxMs");
  } finally {
    renew.close();
  }
});
