// Steady producer for bench/http/produce_bench.ts's end-to-end phase: `rate` single
// produces per second, spread evenly (a few every millisecond, not a burst per second),
// at most `inflight` outstanding. Usage: paced_producer.ts <url> <rate> <seconds>
import process from "node:process";

const [url, rateText, secondsText] = process.argv.slice(2);
const rate = Number(rateText), seconds = Number(secondsText);
const inflightMax = 64;
const body = new Uint8Array(1024).fill(97);
let sent = 0, inflight = 0, failed = 0;
const start = performance.now();
const end = start + seconds * 1000;
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
      fetch(url, { method: "POST", body }).then((r) => r.arrayBuffer().then(() => r.ok || failed++))
        .catch(() => failed++).finally(() => inflight--);
    }
    setTimeout(tick, 1);
  };
  tick();
});
process.stdout.write(JSON.stringify({ sent, failed }) + "\n");
