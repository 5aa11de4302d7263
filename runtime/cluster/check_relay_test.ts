// The transaction-check relay (check_relay.ts) over a fake core: one poll loop per producer
// group while a channel is registered, checks rotated over the channels, an answer in reply
// ended with fromCheck, a failing channel skipped, the loop stopped by the last unregister.
import assert from "node:assert/strict";
import { TransactionCheckRelay } from "./check_relay.ts";
import type { TransactionCheck } from "../protocol/transaction_types.ts";
import { signalOf, type SignalSource } from "../protocol/types.ts";

function check(id: string, n = 1): TransactionCheck {
  return {
    transactionId: id,
    messageId: id,
    topic: "t",
    queueId: 0,
    producerGroup: "pg",
    check: n,
    bornTimestamp: 0,
    message: {} as TransactionCheck["message"],
  };
}

class FakeCore {
  readonly queue: TransactionCheck[] = [];
  readonly ended: string[] = [];
  polls = 0;
  failNext = 0;
  active = 0;
  #wake: (() => void) | undefined;
  offer(...checks: TransactionCheck[]) {
    this.queue.push(...checks);
    this.#wake?.();
  }
  async pollTransactionChecks(_g: string, o: { max?: number }, s?: SignalSource) {
    this.polls++;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("no group reachable");
    }
    const signal = signalOf(s)!;
    this.active++;
    try {
      while (this.queue.length === 0 && !signal.aborted) {
        await new Promise<void>((r) => {
          this.#wake = r;
          signal.addEventListener("abort", () => r(), { once: true });
        });
      }
      return this.queue.splice(0, o.max ?? 16);
    } finally {
      this.active--;
    }
  }
  endTransaction(id: string, d: string, o?: { fromCheck?: boolean }) {
    this.ended.push(`${id}:${d}:${o?.fromCheck}`);
    return Promise.resolve({} as never);
  }
}

const until = async (ok: () => boolean) => {
  for (const end = Date.now() + 3000; !ok();) {
    assert.ok(Date.now() < end, "not within 3 s");
    await new Promise((r) => setTimeout(r, 5));
  }
};

Deno.test("TransactionCheckRelay: polls while a channel is registered, rotates, ends answers", async () => {
  const core = new FakeCore();
  const lines: string[] = [];
  const relay = new TransactionCheckRelay(core, {
    waitMs: 1000,
    max: 4,
    retryMs: 10,
    log: (l) => lines.push(l),
  });
  const a: string[] = [];
  const b: string[] = [];
  const offA = relay.registerTransactionCheckChannel("pg", {
    send: (c) => (a.push(c.transactionId), Promise.resolve("COMMIT")),
  });
  const offB = relay.registerTransactionCheckChannel("pg", {
    send: (c) => (b.push(c.transactionId), Promise.resolve(undefined)),
  });
  assert.deepEqual(relay.groups, ["pg"]);
  await until(() => core.active === 1);
  core.offer(check("x1", 1), check("x2", 2));
  await until(() => a.length + b.length === 2);
  assert.deepEqual([a.length, b.length], [1, 1], "rotated over both producers");
  await until(() => core.ended.length === 1);
  assert.deepEqual(core.ended, [`${a[0]}:COMMIT:true`], "only the answer in reply is ended");

  // A channel that fails passes the check on; a failed poll is retried after retryMs.
  const offC = relay.registerTransactionCheckChannel("pg", {
    send: () => Promise.reject(new Error("stream closed")),
  });
  offA();
  offB();
  const d: string[] = [];
  const offD = relay.registerTransactionCheckChannel("pg", {
    send: (c) => (d.push(c.transactionId), Promise.resolve("ROLLBACK")),
  });
  core.failNext = 1;
  core.offer(check("x3", 3));
  await until(() => d.length === 1);
  await until(() => core.ended.length === 2);
  assert.equal(core.ended[1], "x3:ROLLBACK:true");

  // The last unregister stops the loop: its poll is aborted, no new one starts.
  offC();
  offD();
  assert.deepEqual(relay.groups, []);
  await until(() => core.active === 0);
  const polls = core.polls;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(core.polls, polls);
  await relay.close();
});
