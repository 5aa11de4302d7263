// Paced producer that records each produce's latency, for bench/runtime/mixed_bench.ts. Run
// by Node.js (like bench/http/paced_producer.mjs, whose loop it shares) so the load generator
// costs little CPU beside the broker. Raw keep-alive HTTP/1.1 over node:net, one request in
// flight per connection, the request bytes built once.
//   node latency_producer.mjs <url> <rate> <seconds> [warmup-s=2] [connections=32] [body-bytes=1024]
// `rate` produces per second, due ones sent every millisecond. Latency = the tick that made
// the produce due -> its answer's last byte, so a produce waiting for an idle connection
// (`late`) counts its wait too. The first warmup-s seconds are not recorded. Prints one JSON
// line: { sent, ok, failed, late, rate, samples, p50_ms, p99_ms, p999_ms, max_ms }.
import net from "node:net";
import process from "node:process";
import { onResponses } from "../http/http_responses.mjs";

const [urlText, rateText, secondsText, warmText = "2", connText = "32", bytesText = "1024"] =
  process.argv.slice(2);
const url = new URL(urlText);
const rate = Number(rateText);
const seconds = Number(secondsText);
const warmupMs = Number(warmText) * 1000;
const connections = Number(connText);
const bodyBytes = Number(bytesText);
if (!(rate > 0 && seconds > 0 && warmupMs >= 0 && connections > 0 && bodyBytes >= 0)) {
  process.stderr.write(
    "usage: latency_producer.mjs <url> <rate> <seconds> [warmup-s] [connections] [body-bytes]\n",
  );
  process.exit(2);
}

const request = Buffer.concat([
  Buffer.from(
    `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${bodyBytes}\r\n\r\n`,
    "latin1",
  ),
  Buffer.alloc(bodyBytes, 97),
]);

let sent = 0, ok = 0, failed = 0, late = 0, stopping = false, live = connections;
const idle = [];
/** Due times (ms) of produces waiting for a connection, oldest first. */
const backlog = [];
const latencies = [];
let start = 0;

function connect() {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    const conn = {
      socket,
      dueAt: 0,
      busy: false,
      send(dueAt) {
        sent++;
        conn.busy = true;
        conn.dueAt = dueAt;
        socket.write(request);
      },
    };
    socket.on("connect", () => resolve(conn));
    socket.on("error", reject);
    onResponses(socket, (status) => {
      const now = performance.now();
      conn.busy = false;
      if (status >= 200 && status < 300) ok++;
      else if (++failed <= 3) process.stderr.write(`latency_producer: answered ${status}\n`);
      if (conn.dueAt - start >= warmupMs) latencies.push(now - conn.dueAt);
      if (backlog.length > 0) conn.send(backlog.shift());
      else idle.push(conn);
    }, (err) => {
      process.stderr.write(`latency_producer: ${err.message}\n`);
      failed++;
    });
    // An idle connection the server closes (its idle timeout) is dropped; one closed with
    // a produce in flight is a failure.
    socket.on("close", () => {
      if (stopping) return;
      live--;
      const i = idle.indexOf(conn);
      if (i >= 0) idle.splice(i, 1);
      if (!conn.busy) return;
      failed++;
      process.stderr.write("latency_producer: the broker closed a connection in use\n");
    });
  });
}

const conns = await Promise.all(Array.from({ length: connections }, connect));
idle.push(...conns);
start = performance.now();
const end = start + seconds * 1000;
let due = 0;
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    if (now < end) {
      const target = Math.floor(((now - start) / 1000) * rate);
      for (; due < target; due++) {
        const conn = idle.pop();
        if (conn) conn.send(now);
        else {
          late++;
          backlog.push(now);
        }
      }
      setTimeout(tick, 1);
    } else if (backlog.length === 0 && idle.length === live) resolve();
    else setTimeout(tick, 1);
  };
  tick();
});
const elapsed = (performance.now() - start) / 1000;
stopping = true;
for (const c of conns) c.socket.destroy();
latencies.sort((a, b) => a - b);
const at = (p) =>
  latencies.length
    ? Number(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))].toFixed(3))
    : null;
process.stdout.write(
  JSON.stringify({
    sent,
    ok,
    failed,
    late,
    rate: Math.round(ok / elapsed),
    samples: latencies.length,
    p50_ms: at(0.5),
    p99_ms: at(0.99),
    p999_ms: at(0.999),
    max_ms: latencies.length ? Number(latencies.at(-1).toFixed(3)) : null,
  }) + "\n",
);
process.exit(0);
