// Steady producer for bench/http/produce_bench.ts's end-to-end phase, run by Node.js (like
// autocannon) so that the load generator costs little CPU next to the server under test:
// fetch on Deno took ~70 µs of CPU per request, as much as the broker itself, on a
// 2-core machine. Raw keep-alive HTTP/1.1 over node:net, one request in flight per
// connection, the request bytes built once.
//   node paced_producer.mjs <url> <rate> <seconds> [connections=32] [body-bytes=1024]
// `rate` produces per second are spread evenly (due ones sent every millisecond). A
// produce that finds no idle connection waits for one (counted as `late`). Prints one
// JSON line: { sent, ok, failed, late, rate } (rate = produces answered per second).
import net from "node:net";
import process from "node:process";
import { onResponses } from "./http_responses.mjs";

const [urlText, rateText, secondsText, connText = "32", bytesText = "1024"] = process.argv.slice(2);
const url = new URL(urlText);
const rate = Number(rateText);
const seconds = Number(secondsText);
const connections = Number(connText);
const bodyBytes = Number(bytesText);
if (!(rate > 0 && seconds > 0 && connections > 0 && bodyBytes >= 0)) {
  process.stderr.write(
    "usage: paced_producer.mjs <url> <rate> <seconds> [connections] [body-bytes]\n",
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

let sent = 0, ok = 0, failed = 0, late = 0, backlog = 0;
const idle = [];

/** One keep-alive connection: counts each answer by status, then sends the next produce. */
function connect() {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    const conn = {
      socket,
      send() {
        sent++;
        socket.write(request);
      },
    };
    socket.on("connect", () => resolve(conn));
    socket.on("error", reject);
    onResponses(socket, (status) => {
      if (status >= 200 && status < 300) ok++;
      else failed++;
      if (backlog > 0) {
        backlog--;
        conn.send();
      } else idle.push(conn);
    }, (err) => {
      process.stderr.write(`paced_producer: ${err.message}\n`);
      failed++;
    });
    socket.on("close", () => {
      if (!stopping) failed++;
    });
  });
}

let stopping = false;
const conns = await Promise.all(Array.from({ length: connections }, connect));
idle.push(...conns);
const start = performance.now();
const end = start + seconds * 1000;
let due = 0;
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    if (now < end) {
      const target = Math.floor(((now - start) / 1000) * rate);
      for (; due < target; due++) {
        const conn = idle.pop();
        if (conn) conn.send();
        else {
          late++;
          backlog++;
        }
      }
      setTimeout(tick, 1);
    } else if (backlog === 0 && idle.length === connections) resolve();
    else setTimeout(tick, 1);
  };
  tick();
});
const elapsed = (performance.now() - start) / 1000;
stopping = true;
for (const c of conns) c.socket.destroy();
process.stdout.write(
  JSON.stringify({ sent, ok, failed, late, rate: Math.round(ok / elapsed) }) + "\n",
);
process.exit(0);
