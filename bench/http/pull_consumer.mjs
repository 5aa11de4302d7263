// Long-polling consumer for bench/http/produce_bench.ts's end-to-end phase, run by Node.js
// like the paced producer, so that the figure is the broker's and not the bench runtime's
// HTTP client: the same consumer measures a broker on Deno and on Bun. One raw keep-alive
// HTTP/1.1 connection per queue, one pull in flight on each (waitMs 500, max 256).
//   node pull_consumer.mjs <base-url> <topic> <offsets, comma-separated> <record-from-ms>
// Pulls queue i from offsets[i] until its stdin ends (or SIGTERM), then prints one JSON line:
//   { received, recorded, pulls, p50, p99, p999, max }   (latencies in ms)
// Latency = arrival (Date.now() once the answer is parsed) minus the message's
// bornTimestamp, for messages born at or after record-from-ms (epoch ms, same clock).
import net from "node:net";
import process from "node:process";
import { onResponses } from "./http_responses.mjs";

const [baseText, topic, offsetsText, recordFromText] = process.argv.slice(2);
const base = new URL(baseText ?? "");
const offsets = (offsetsText ?? "").split(",").map(Number);
const recordFrom = Number(recordFromText);
if (!topic || offsets.some((o) => !Number.isSafeInteger(o) || o < 0) || !(recordFrom > 0)) {
  process.stderr.write(
    "usage: pull_consumer.mjs <base-url> <topic> <offsets,...> <record-from-ms>\n",
  );
  process.exit(2);
}

const latencies = [];
let received = 0, pulls = 0, stopping = false;

/** Pulls queue `queueId` from `offset` over one connection until stopping. */
function consume(queueId, offset) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(base.port), base.hostname);
    socket.setNoDelay(true);
    const path = `/v1/topics/${encodeURIComponent(topic)}/queues/${queueId}/messages`;
    const send = () =>
      socket.write(
        `GET ${path}?offset=${offset}&max=256&waitMs=500 HTTP/1.1\r\nHost: ${base.host}\r\n\r\n`,
      );
    socket.on("connect", send);
    socket.on("error", (err) => (stopping ? resolve() : reject(err)));
    socket.on("close", () => resolve());
    onResponses(socket, (status, bytes) => {
      const body = bytes.toString("utf8");
      if (status !== 200) {
        reject(new Error(`pull answered ${status}: ${body}`));
        return socket.destroy();
      }
      const page = JSON.parse(body);
      const now = Date.now();
      pulls++;
      for (const m of page.messages) {
        received++;
        if (m.bornTimestamp >= recordFrom) latencies.push(now - m.bornTimestamp);
      }
      offset = page.nextOffset;
      if (stopping) return socket.end();
      send();
    }, reject);
  });
}

const done = Promise.all(offsets.map((offset, queueId) => consume(queueId, offset)));
// Stopped by the end of stdin: Deno's node:child_process reports a child that handled
// SIGTERM and exited 0 as killed by the signal.
process.on("SIGTERM", () => (stopping = true));
process.stdin.on("end", () => (stopping = true));
process.stdin.resume();
try {
  await done;
} catch (err) {
  process.stderr.write(`pull_consumer: ${err.message}\n`);
  process.exit(1);
}
latencies.sort((a, b) => a - b);
const at = (q) =>
  latencies.length
    ? latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]
    : NaN;
process.stdout.write(
  JSON.stringify({
    received,
    recorded: latencies.length,
    pulls,
    p50: at(0.5),
    p99: at(0.99),
    p999: at(0.999),
    max: latencies.at(-1) ?? NaN,
  }) + "\n",
);
