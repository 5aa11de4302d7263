// A broker process loads what its first produce does not need on first use (cold start:
// bench/README.md): a route family and the OpenAPI document still answer their first
// request, and a broker on a local KV file still registers in its route table, right after
// "listening" instead of before.
import assert from "node:assert/strict";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";
import { decodeRoute, ROUTES_PREFIX } from "../runtime/protocol/routes.ts";

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime}: lazy routes answer their first request; the local route table is written`, async () => {
    await using broker = await startBroker(runtime);
    // The very first request goes to a lazily loaded family: it answers, the second too.
    const topic = await fetch(`${broker.url}/v1/topics/lazy`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ readQueueNums: 2, writeQueueNums: 2 }),
    });
    assert.equal(topic.status, 200, await topic.text());
    const list = await fetch(`${broker.url}/v1/topics`);
    assert.equal(list.status, 200);
    assert.ok((await list.json()).topics.some((t: { name: string }) => t.name === "lazy"));
    const produced = await fetch(`${broker.url}/v1/topics/lazy/messages`, {
      method: "POST",
      body: "hello",
    });
    assert.equal(produced.status, 201, await produced.text());
    const doc = await fetch(`${broker.url}/openapi.json`);
    assert.equal(doc.status, 200);
    assert.ok("/v1/topics/{topic}" in (await doc.json()).paths);

    // The route entry lands in <dataDir>/kv.sqlite shortly after "listening".
    const kv = await Deno.openKv(`${broker.dataDir}/kv.sqlite`);
    try {
      let entry;
      for (let i = 0; i < 100 && !entry; i++) {
        const got = await kv.get<Uint8Array>([...ROUTES_PREFIX, "DefaultCluster", "broker-a"]);
        entry = got.value ? decodeRoute(got.value) : undefined;
        if (!entry) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(entry, "no route entry in the local KV file");
      assert.equal(entry.address, new URL(broker.url).host);
    } finally {
      kv.close();
    }
  });
}
