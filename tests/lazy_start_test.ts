// A broker process loads what its first produce does not need on first use (cold start:
// bench/README.md): a route family and the OpenAPI document still answer their first
// request; a lone broker on a local KV file leaves it unopened.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { startBroker } from "./harness/broker.ts";
import { RUNTIMES } from "./harness/process.ts";

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime}: lazy routes answer their first request; a local KV file stays unopened`, async () => {
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

    // A local KV file is this process's alone: a lone broker neither registers there nor
    // opens it (on Bun that would load @deno/kv: bench/README.md, "Round 6 … idle RSS").
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(existsSync(`${broker.dataDir}/kv.sqlite`), false, "the local KV file was opened");
  });
}
