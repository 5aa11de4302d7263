// Run by Node.js (tests/grpc_test.ts): <rounds> times, one grpc-js channel makes <calls>
// Heartbeat calls (8 at a time) and closes, which sends GOAWAY after many streams — what
// Deno 2.9.6's node:http2 server aborted on (functions/grpc/goaway_shield.ts). Deno's own
// http2 client sends no GOAWAY on close, hence Node. Prints {"answered": n}.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");
const [address, rounds, calls] = process.argv.slice(2);
const root = join(dirname(require.resolve("rocketmq-client-nodejs/package.json")), "proto");
const def = loader.loadSync("apache/rocketmq/v2/service.proto", { includeDirs: [root] });
const Service = grpc.loadPackageDefinition(def).apache.rocketmq.v2.MessagingService;
let answered = 0;
for (let r = 0; r < Number(rounds); r++) {
  const client = new Service(address, grpc.credentials.createInsecure());
  let left = Number(calls);
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (left-- > 0) {
      // Refused (no credentials) or not, each call is one stream with a status.
      await new Promise((resolve) => client.heartbeat({}, (err) => resolve(err?.code ?? 0)));
      answered++;
    }
  }));
  client.close();
  await new Promise((resolve) => setTimeout(resolve, 100));
}
process.stdout.write(JSON.stringify({ answered }) + "\n");
