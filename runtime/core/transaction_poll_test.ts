import assert from "node:assert/strict";
import { TransactionPollQueues } from "./transaction_poll.ts";
import type { TransactionCheck } from "../protocol/transaction_types.ts";

function check(id: string, group = "g", n = 1): TransactionCheck {
  return {
    transactionId: id,
    messageId: id,
    topic: "T",
    queueId: 0,
    producerGroup: group,
    check: n,
    bornTimestamp: 0,
    message: {} as TransactionCheck["message"],
  };
}

Deno.test("TransactionPollQueues.poll() takes queued checks, a newer check of one transaction replacing the older", async () => {
  const q = new TransactionPollQueues({ queuedMax: 2, waitingMax: 4 });
  q.offer(check("A", "g", 1));
  q.offer(check("B"));
  q.offer(check("A", "g", 2)); // replaces A's first, moves to the end
  q.offer(check("C")); // over queuedMax: the oldest (B) goes
  const got = await q.poll("g", 10, 0);
  assert.deepEqual(got.map((c) => [c.transactionId, c.check]), [["A", 2], ["C", 1]]);
  assert.deepEqual(await q.poll("g", 10, 0), []);
});

Deno.test("TransactionPollQueues.poll() waits for the next check, its wait, or its signal; decided() drops", async () => {
  const q = new TransactionPollQueues({ queuedMax: 10, waitingMax: 1 });
  const waiting = q.poll("g", 10, 5000);
  await assert.rejects(q.poll("g", 10, 5000), { code: "TOO_MANY_WAITING" });
  q.offer(check("X"));
  assert.deepEqual((await waiting).map((c) => c.transactionId), ["X"]);
  const aborted = new AbortController();
  const held = q.poll("g", 10, 5000, aborted.signal);
  aborted.abort();
  assert.deepEqual(await held, []);
  assert.deepEqual(await q.poll("g", 10, 10), []); // its wait ends
  q.offer(check("Y", "h"));
  q.decided("h", "Y");
  assert.deepEqual(await q.poll("h", 10, 0), []);
  const last = q.poll("g", 10, 5000);
  q.close();
  assert.deepEqual(await last, []);
});
