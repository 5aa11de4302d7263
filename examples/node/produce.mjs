// A Node (>= 20) script using the npm package: produce a batch, then consume it with the
// consumer loop and stop. `npm install @edgemq/client`, then
//   MQ_URL=http://127.0.0.1:8080 node produce.mjs
import { MqClient } from "@edgemq/client";

const mq = new MqClient({ baseUrl: process.env.MQ_URL, token: process.env.MQ_TOKEN });
const topic = process.env.TOPIC ?? "orders";

// A new group starts at the end of the topic unless told otherwise.
await mq.upsertGroup("node-example", { consumeFromWhere: "FIRST_OFFSET" });
const results = await mq.produceBatch(topic, [
  { body: "first", tag: "node", keys: ["order-1"] },
  { body: new TextEncoder().encode("second"), tag: "node", properties: { via: "node" } },
]);

const seen = [];
const stopper = new AbortController();
setTimeout(() => stopper.abort(), 10_000).unref(); // give up after 10 s
const sub = mq.subscribe(topic, "node-example", (message) => {
  seen.push(message.body);
  if (seen.length === results.length) stopper.abort();
}, { concurrency: 2, waitMs: 1000, signal: stopper.signal });
await sub.done;
console.log(JSON.stringify({ produced: results.filter((r) => r.ok).length, consumed: seen }));
