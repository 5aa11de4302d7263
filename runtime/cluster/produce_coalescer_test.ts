// Coalescing of concurrent single produces into one batch call (produce_coalescer.ts): a
// fake group client counts the calls; then the router over real in-process brokers.
import assert from "node:assert/strict";
import { BrokerError } from "../protocol/errors.ts";
import type { BatchItemResult, ProduceMessage, ProduceResult } from "../protocol/types.ts";
import { type CoalesceSettings, ProduceCoalescer } from "./produce_coalescer.ts";
import { SINGLE_CONTENT_TYPE, singleForm } from "./single_form.ts";
import type { GroupLink } from "./route_source.ts";
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "./client.ts";

const body = new Uint8Array(10);
const isCode = (code: string) => (err: unknown) => err instanceof BrokerError && err.code === code;

function result(i: number, topic: string): ProduceResult {
  return {
    messageId: `id-${i}`,
    topic,
    queueId: 0,
    queueOffset: i,
    commitLogOffset: i,
    storeTimestamp: 0,
    durability: "WRITTEN",
  };
}

/** A group whose produceBatch answers per item (an item with tag "bad" fails alone), or
 * throws `batchError` when set. */
function fakeLink() {
  const singles: ProduceMessage[] = [];
  const batches: ProduceMessage[][] = [];
  let n = 0;
  const state = { batchError: undefined as unknown };
  const client = {
    produce(topic: string, m: ProduceMessage) {
      singles.push(m);
      if (m.tag === "bad") {
        return Promise.reject(new BrokerError("INVALID_PROPERTY", "bad tag"));
      }
      return Promise.resolve(result(n++, topic));
    },
    produceBatch(topic: string, ms: ProduceMessage[]): Promise<BatchItemResult[]> {
      batches.push(ms);
      if (state.batchError) return Promise.reject(state.batchError);
      return Promise.resolve(ms.map((m, index): BatchItemResult => {
        if (m.tag !== "bad") return { ok: true, ...result(n++, topic) };
        const e = new BrokerError("INVALID_PROPERTY", "bad tag");
        return {
          ok: false,
          index,
          error: { type: e.type, status: e.status, detail: e.message, code: e.code },
        };
      }));
    },
  };
  const link = { name: "g", url: "http://g.test", epoch: 0, client } as unknown as GroupLink;
  return { link, singles, batches, state };
}

const on = (over: Partial<CoalesceSettings> = {}): CoalesceSettings => ({
  clusterProduceCoalesceEnable: true,
  clusterProduceCoalesceItemsMax: 64,
  clusterProduceCoalesceBytesMax: 1024,
  clusterProduceCoalesceInFlightMax: 1,
  ...over,
});

Deno.test("ProduceCoalescer: concurrent produces become one batch call, answered per item", async () => {
  const { link, singles, batches } = fakeLink();
  const co = new ProduceCoalescer(on());
  const messages: ProduceMessage[] = [
    { body, idempotencyKey: "k1" },
    { body, messageId: "mine-1", delayMs: 5000 },
    { body, tag: "bad" },
    { body, queueId: 3, shardingKey: "s", contentType: "text/plain", keys: ["a", "b"] },
  ];
  const settled = await Promise.allSettled(messages.map((m) => co.produce(link, "t", m)));
  assert.equal(batches.length, 1, "one batch call");
  assert.equal(singles.length, 0, "no single produce");
  assert.deepEqual(
    batches[0],
    messages.map((m) => ({ ...m, contentType: m.contentType ?? SINGLE_CONTENT_TYPE })),
    "every field rides along, in order, with the single produce's default content type",
  );
  assert.deepEqual(settled.map((s) => s.status), [
    "fulfilled",
    "fulfilled",
    "rejected",
    "fulfilled",
  ]);
  const ids = settled.map((s) => s.status === "fulfilled" ? s.value.messageId : undefined);
  assert.deepEqual(ids, ["id-0", "id-1", undefined, "id-2"], "each caller its own result");
  assert.ok(!("ok" in (settled[0] as PromiseFulfilledResult<ProduceResult>).value));
  const err = (settled[2] as PromiseRejectedResult).reason;
  assert.ok(isCode("INVALID_PROPERTY")(err), "the failed item's own error");
  assert.equal(co.batches, 1);
  assert.equal(co.messages, 4);
  // Another topic or another turn is another call; a lone message is a single produce.
  await co.produce(link, "t", { body });
  assert.equal(singles.length, 1);
  await Promise.all([co.produce(link, "t", { body }), co.produce(link, "u", { body })]);
  assert.equal(singles.length, 3, "one message per topic: each alone");
});

Deno.test("singleForm: only what the single produce's headers carry unchanged is coalesced", async () => {
  const fine: ProduceMessage = {
    body,
    tag: "t",
    keys: ["k1", "k2"],
    properties: { a: "1", "b-c": "x y" },
    idempotencyKey: "id",
  };
  assert.deepEqual(singleForm(fine), { ...fine, contentType: SINGLE_CONTENT_TYPE });
  for (
    const odd of [
      { tag: " padded" },
      { tag: "caf\u00e9" },
      { keys: [] },
      { keys: ["two words"] },
      { properties: {} },
      { properties: { Upper: "1" } },
      { properties: { b: "1", a: "2" } }, // headers arrive sorted
      { properties: { a: "line\nbreak" } },
      { contentType: "text/plain " },
    ] as Partial<ProduceMessage>[]
  ) assert.equal(singleForm({ body, ...odd }), undefined, JSON.stringify(odd));
  // Such a message goes alone even among concurrent ones.
  const { link, singles, batches } = fakeLink();
  const co = new ProduceCoalescer(on());
  await Promise.all([
    co.produce(link, "t", { body, properties: { Upper: "1" } }),
    co.produce(link, "t", { body }),
    co.produce(link, "t", { body }),
  ]);
  assert.deepEqual(singles.map((m) => m.properties), [{ Upper: "1" }]);
  assert.equal(batches.length, 1);
  assert.equal(batches[0].length, 2);
});

Deno.test("ProduceCoalescer: limits, whole-batch failures and off", async () => {
  const { link, singles, batches, state } = fakeLink();
  const co = new ProduceCoalescer(on({ clusterProduceCoalesceItemsMax: 2 }));
  await Promise.all([1, 2, 3, 4, 5].map(() => co.produce(link, "t", { body })));
  assert.deepEqual(batches.map((b) => b.length), [2, 2]);
  assert.equal(singles.length, 1, "the fifth alone");

  // Bytes: a large body always alone; the open batch goes when the next would overflow it.
  batches.length = singles.length = 0;
  const big = new Uint8Array(1025);
  const half = new Uint8Array(600);
  await Promise.all([
    co.produce(link, "t", { body: big }),
    co.produce(link, "t", { body: half }),
    co.produce(link, "t", { body: half }),
  ]);
  assert.deepEqual(singles.map((m) => m.body.length), [1025, 600, 600]);
  assert.equal(batches.length, 0);

  // A whole-batch failure is every item's error (the router's isSendElsewhere per item).
  batches.length = singles.length = 0;
  const down = new BrokerError("BROKER_UNAVAILABLE", "reset", { requestSent: "unknown" });
  state.batchError = down;
  const two = await Promise.allSettled([
    co.produce(link, "t", { body }),
    co.produce(link, "t", { body }),
  ]);
  assert.deepEqual(two.map((s) => s.status === "rejected" && s.reason), [down, down]);
  assert.equal(singles.length, 0, "not sent again");

  // A batch refused as a request (400/413: nothing stored) goes again one by one.
  state.batchError = new BrokerError("PAYLOAD_TOO_LARGE", "too large");
  const again = await Promise.all([
    co.produce(link, "t", { body }),
    co.produce(link, "t", { body }),
  ]);
  assert.equal(again.length, 2);
  assert.equal(singles.length, 2);
  state.batchError = undefined;

  const off = new ProduceCoalescer(on({ clusterProduceCoalesceEnable: false }));
  batches.length = singles.length = 0;
  await Promise.all([off.produce(link, "t", { body }), off.produce(link, "t", { body })]);
  assert.equal(batches.length, 0);
  assert.equal(singles.length, 2);
});

Deno.test("ClusterClient: concurrent produces over real brokers go as batches, retried per item", async () => {
  await withCluster(2, async (groups, routes, failing) => {
    const client = new ClusterClient(routes, {} as ClusterTopicAdminPort, {});
    await routes.createTopic("t", 2);
    const n = 8;
    // The SDK link sends application/octet-stream when no type is given, as the batch item
    // says; the in-process broker here takes the message as is, so the test says it.
    const octet = { body, contentType: SINGLE_CONTENT_TYPE, idempotencyKey: "once" };
    const keyed = await client.produce("t", octet);
    const rs = await Promise.all(
      Array.from(
        { length: n },
        (_, i) =>
          client.produce("t", { body: new TextEncoder().encode(`m${i}`), messageId: `mid-${i}` }),
      ),
    );
    assert.equal(groups[0].calls.get("produceBatch"), 1, "g-a: one batch");
    assert.equal(groups[1].calls.get("produceBatch"), 1, "g-b: one batch");
    const again = await Promise.all([
      client.produce("t", { ...octet }),
      client.produce("t", { ...octet }),
    ]);
    assert.equal(
      groups[0].calls.get("produceBatch")! + groups[1].calls.get("produceBatch")!,
      3,
      "the two repeats of one key: one batch to the key's group",
    );
    assert.deepEqual(rs.map((r) => r.messageId), rs.map((_, i) => `mid-${i}`));
    for (const [i, r] of rs.entries()) {
      const got = await client.pull("t", r.queueId, { offset: r.queueOffset, max: 1 });
      assert.equal(got.messages[0].messageId, `mid-${i}`, "stored where it says, global id");
      const m = got.messages[0];
      const text = m.bodyEncoding === "base64" ? atob(m.body) : m.body;
      assert.equal(text, `m${i}`);
    }
    for (const r of again) {
      assert.equal(r.idempotentReplay, true);
      assert.equal(r.messageId, keyed.messageId);
      assert.equal(r.queueId, keyed.queueId);
    }

    // g-b refuses before storing: its unkeyed items go to g-a, each answered.
    failing.add("g-b");
    const moved = await Promise.all(
      Array.from({ length: 4 }, () => client.produce("t", { body })),
    );
    assert.ok(moved.every((r) => r.queueId < 1024), `all on g-a: ${moved.map((r) => r.queueId)}`);
    failing.delete("g-b");
  });
});
