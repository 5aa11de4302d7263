// gRPC SendMessage load over bare node:http2 (Node.js, a process of its own and about as
// lean as autocannon is for the HTTP side; grpc-js's own client tops out near the server's
// rate on this machine): each call is one HTTP/2 stream on one of <connections>, the
// request encoded with the service's own serializer.
//   node bench/grpc/h2_load.mjs <host:port> <topic> <calls in flight> <seconds> <bodyBytes> [connections=4]
// Prints {"requests": <per second>, "errors": n}. A call counts when the response says
// Code OK (20000) and the trailers grpc-status 0.
import http2 from "node:http2";
import net from "node:net";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");
const [address, topic, inFlight, seconds, bodyBytes, connections] = process.argv.slice(2);
const root = join(dirname(require.resolve("rocketmq-client-nodejs/package.json")), "proto");
const def = loader.loadSync("apache/rocketmq/v2/service.proto", {
  includeDirs: [root],
  longs: Number,
  enums: Number,
  defaults: false,
  oneofs: true,
});
const send = grpc.loadPackageDefinition(def).apache.rocketmq.v2.MessagingService.service
  .SendMessage;
const CONNECTIONS = Number(connections ?? 4);
const sessions = Array.from({ length: CONNECTIONS }, () => {
  // Small frames go out at once: Nagle's algorithm would hold them for the peer's ACK.
  const [host, port] = address.split(":");
  return http2.connect(`http://${address}`, {
    createConnection: () => net.connect({ host, port: Number(port), noDelay: true }),
  });
});
const body = Buffer.alloc(Number(bodyBytes), 120);
const headers = {
  ":method": "POST",
  ":path": send.path,
  "content-type": "application/grpc",
  te: "trailers",
  "x-mq-client-id": `bench@${process.pid}`,
};
let sequence = 0;
let done = 0;
let errors = 0;
const until = Date.now() + Number(seconds) * 1000;

function call(session) {
  const id = "01" + (sequence++).toString(16).toUpperCase().padStart(32, "0");
  const message = send.requestSerialize({
    messages: [{
      topic: { name: topic },
      systemProperties: { messageId: id, messageType: 1, bodyEncoding: 1, bornHost: "bench" },
      body,
    }],
  });
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return new Promise((resolve) => {
    const stream = session.request(headers);
    const chunks = [];
    let status = "";
    stream.on("data", (c) => chunks.push(c));
    stream.on("trailers", (t) => status = String(t["grpc-status"]));
    stream.on("error", () => {});
    stream.on("close", () => {
      const reply = Buffer.concat(chunks);
      const ok = status === "0" && reply.length > 5 &&
        send.responseDeserialize(reply.subarray(5)).status?.code === 20000;
      if (ok) done++;
      else errors++;
      resolve();
    });
    stream.end(frame);
  });
}

async function loop(i) {
  while (Date.now() < until) await call(sessions[i % CONNECTIONS]);
}

const started = Date.now();
await Promise.all(Array.from({ length: Number(inFlight) }, (_, i) => loop(i)));
const s = (Date.now() - started) / 1000;
process.stdout.write(JSON.stringify({ requests: done / s, errors }) + "\n");
for (const x of sessions) x.close();
