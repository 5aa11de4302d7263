// The steady producer of bench/webhook/push_bench.ts's latency phase: `rate` single
// produces per second, spread evenly (a few every millisecond, not a burst per second), at
// most 64 outstanding. Each 1 KiB body starts with "t=<send ms>;", the send time on the
// clock `performance.timeOrigin + performance.now()`, which the receiver compares with its
// own. Child process of the bench, same runtime.
//
//   paced_producer.ts <url> <rate> <seconds> <body-bytes> [broker|direct]
//
// broker (default): <url> is the broker's produce endpoint; the ids are the message ids it
// answered. direct: <url> is the receiver itself (the latency baseline); each POST carries
// its own webhook-id header, "direct-<n>", as a delivery would, and those are the ids.
// Prints one JSON line on stdout: {"sent":N,"failed":F,"ids":[...]}
import process from "node:process";

const [url, rateText, secondsText, bytesText = "1024", mode = "broker"] = process.argv.slice(2);
const direct = mode === "direct";
const rate = Number(rateText), seconds = Number(secondsText);
const inflightMax = 64;
const encoder = new TextEncoder();
const template = new Uint8Array(Number(bytesText)).fill("m".charCodeAt(0));
const ids: string[] = [];
let sent = 0, inflight = 0, failed = 0;
const start = performance.now();
const end = start + seconds * 1000;

function produce() {
  const body = template.slice();
  encoder.encodeInto(`t=${(performance.timeOrigin + performance.now()).toFixed(3)};`, body);
  const id = `direct-${sent}`;
  fetch(url, {
    method: "POST",
    headers: direct
      ? { "content-type": "application/octet-stream", "webhook-id": id }
      : { "content-type": "application/octet-stream" },
    body,
  }).then(async (r) => {
    if (direct) {
      await r.arrayBuffer();
      if (r.ok) ids.push(id);
      else failed++;
      return;
    }
    const answer = await r.json();
    if (r.ok && typeof answer.messageId === "string") ids.push(answer.messageId);
    else failed++;
  }).catch(() => failed++).finally(() => inflight--);
}

await new Promise<void>((resolve) => {
  const tick = () => {
    const now = performance.now();
    if (now >= end) {
      if (inflight === 0) return resolve();
      return void setTimeout(tick, 1);
    }
    const due = Math.floor(((now - start) / 1000) * rate);
    while (sent < due && inflight < inflightMax) {
      sent++;
      inflight++;
      produce();
    }
    setTimeout(tick, 1);
  };
  tick();
});
process.stdout.write(JSON.stringify({ sent, failed, ids }) + "\n");
