import assert from "node:assert/strict";
import type { MessageStore } from "../../storage/message_store.ts";
import type { PutResult } from "../../storage/store_types.ts";
import type { WebhookEgress } from "../webhook/egress.ts";
import { TransactionCheckChannels } from "./transaction_channels.ts";
import { TransactionPollQueues } from "./transaction_poll.ts";

const HOUR_MS = 3_600_000;

function channels(now: { ms: number }) {
  const puts: { group: string; body: string }[] = [];
  const emptyStore = {
    getMinOffsetInQueue: () => 0,
    getMaxOffsetInQueue: () => 0,
  } as unknown as MessageStore;
  const c = new TransactionCheckChannels({
    store: emptyStore,
    put: (input) => {
      puts.push({
        group: input.properties.get("PGROUP")!,
        body: new TextDecoder().decode(input.body),
      });
      return Promise.resolve({ storeTimestamp: now.ms } as PutResult);
    },
    retentionMs: 72 * HOUR_MS,
    transport: (() => Promise.reject(new Error("no egress"))) as WebhookEgress["transport"],
    checkUrl: () => {},
    polls: new TransactionPollQueues({ queuedMax: 10, waitingMax: 10 }),
    nowMs: () => now.ms,
    log: () => {},
    timeoutMs: 1000,
  });
  return { c, puts };
}

Deno.test("TransactionCheckChannels.refresh() puts a registration again before retention could delete it", async () => {
  const now = { ms: 1_000_000 };
  const { c, puts } = channels(now);
  await c.set("shop", { url: "https://shop.example/check" });
  assert.equal(puts.length, 1);
  now.ms += 23 * HOUR_MS;
  c.refresh();
  assert.equal(puts.length, 1, "too early");
  now.ms += 2 * HOUR_MS; // past a third of 72 h
  c.refresh();
  c.refresh(); // one refresh in flight at a time
  await Promise.resolve();
  assert.equal(puts.length, 2);
  assert.equal(JSON.parse(puts[1].body).url, "https://shop.example/check");
  await c.delete("shop");
  assert.deepEqual(JSON.parse(puts[2].body), { deleted: true });
  now.ms += 100 * HOUR_MS;
  c.refresh();
  assert.equal(puts.length, 3, "a deleted group is not refreshed");
});

Deno.test("TransactionCheckChannels.send() tries front-end channels in turn, then the long poll", async () => {
  const { c } = channels({ ms: 0 });
  const check = {
    transactionId: "A",
    messageId: "A",
    topic: "T",
    queueId: 0,
    producerGroup: "g",
    check: 1,
    bornTimestamp: 0,
    message: {} as never,
  };
  const unregister = c.registerTransactionCheckChannel("g", {
    send: () => Promise.reject(new Error("gone")),
  });
  c.registerTransactionCheckChannel("g", { send: () => Promise.resolve("COMMIT" as const) });
  assert.equal(await c.send(check), "COMMIT");
  unregister();
  assert.equal(await c.send({ ...check, producerGroup: "nobody" }), undefined); // queued
});
