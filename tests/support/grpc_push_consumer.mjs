// Run by Node.js (tests/grpc_test.ts): the official PushConsumer on <group>/<topic> until it
// has consumed <count> messages (or 15 s pass). The first delivery of the body "p2" fails
// (ConsumeResult.FAILURE, given back by ChangeInvisibleDuration). Prints the consumed
// "<body>@<delivery attempt>" list as JSON. A process of its own because the client's
// consume service starts a file logger (~/logs/rocketmq) whose interval never stops.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { ConsumeResult, PushConsumer } = require("rocketmq-client-nodejs");
const [endpoints, group, topic, count, keyName, key] = process.argv.slice(2);
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const got = [];
let failed = false;
const consumer = new PushConsumer({
  endpoints,
  namespace: "",
  consumerGroup: group,
  subscriptions: new Map([[topic, "*"]]),
  logger: quiet,
  sessionCredentials: { accessKey: keyName, accessSecret: key },
  messageListener: {
    consume(m) {
      const body = m.body.toString();
      if (body === "p2" && !failed) {
        failed = true;
        return ConsumeResult.FAILURE;
      }
      got.push(`${body}@${m.deliveryAttempt}`);
      return ConsumeResult.SUCCESS;
    },
  },
});
await consumer.startup();
const until = Date.now() + 15_000;
while (got.length < Number(count) && Date.now() < until) {
  await new Promise((r) => setTimeout(r, 100));
}
await consumer.shutdown();
process.stdout.write(JSON.stringify(got.sort()) + "\n");
process.exit(0);
