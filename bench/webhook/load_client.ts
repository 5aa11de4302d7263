// The baseline load of bench/webhook/push_bench.ts: `concurrency` loops POST to `url` one
// request after another (keep-alive), each a 1 KiB body that starts with "t=<send ms>;"
// and a unique webhook-id header, as the broker's deliveries carry, so the receiver does
// the same work per request. Child process of the bench, same runtime.
//
//   load_client.ts <url> <concurrency> <warmup-s> <seconds> <fetch|node-http> <body-bytes>
//
// Warm-up requests are sent but not counted. Prints "measuring" when the counted part
// starts, then one JSON line on stdout:
//   {"requests":N,"seconds":S,"perSecond":R,"failed":F,"cpuCores":C}
import process from "node:process";
import http from "node:http";

const [url, concurrencyText, warmupText, secondsText, client = "fetch", bytesText = "1024"] =
  process.argv.slice(2);
const concurrency = Number(concurrencyText);
const warmupMs = Number(warmupText) * 1000;
const ms = Number(secondsText) * 1000;
const bodyBytes = Number(bytesText);
const now = () => performance.timeOrigin + performance.now();
const encoder = new TextEncoder();
const template = new Uint8Array(bodyBytes).fill("m".charCodeAt(0));

/** A body that starts with "t=<now>;", the rest as the template. */
function stampedBody(): Uint8Array {
  const body = template.slice();
  encoder.encodeInto(`t=${now().toFixed(3)};`, body);
  return body;
}

let serial = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const target = new URL(url);

function postFetch(): Promise<boolean> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/octet-stream",
      "webhook-id": `load-${serial++}`,
    },
    body: stampedBody() as Uint8Array<ArrayBuffer>,
  }).then(async (r) => {
    await r.arrayBuffer();
    return r.ok;
  }, () => false);
}

function postNodeHttp(): Promise<boolean> {
  const body = stampedBody();
  return new Promise((resolve) => {
    const req = http.request({
      agent,
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: "POST",
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(body.length),
        "webhook-id": `load-${serial++}`,
      },
    }, (res) => {
      res.on("data", () => {});
      res.on("end", () => resolve(res.statusCode === 200));
      res.on("error", () => resolve(false));
    });
    req.on("error", () => resolve(false));
    req.end(body);
  });
}

const post = client === "node-http" ? postNodeHttp : postFetch;

async function run(durationMs: number): Promise<{ done: number; failed: number }> {
  let done = 0, failed = 0;
  const end = performance.now() + durationMs;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      if (await post()) done++;
      else failed++;
    }
  }));
  return { done, failed };
}

await run(warmupMs);
process.stdout.write("measuring\n"); // the bench samples the receiver's CPU from here
const cpu = process.cpuUsage();
const start = performance.now();
const { done, failed } = await run(ms);
const seconds = (performance.now() - start) / 1000;
const used = process.cpuUsage(cpu);
agent.destroy();
process.stdout.write(
  JSON.stringify({
    requests: done,
    seconds,
    perSecond: done / seconds,
    failed,
    cpuCores: (used.user + used.system) / 1e6 / seconds,
  }) + "\n",
);
