// Allocation and CPU per single produce, in process, without sockets. Same file on Deno and Bun:
//   deno run -A bench/http/produce_alloc_bench.ts [--json] [--ops 20000] [--rounds 3]
//   bun run bench/http/produce_alloc_bench.ts [--json] [--ops 20000] [--rounds 3]
// --only http,broker runs only those phases (with --cpu-prof: a profile of one layer).
// It opens a broker (ASYNC_FLUSH, fresh temp folder, no segment zero-fill) and its Hono app
// in this process and drives four layers with the same 1 KiB body, 64 requests in flight
// (one event-loop turn gathers them, as under load):
//   hello   app.fetch of a hello-world Hono POST (the baseline: what any Hono route costs)
//   http    app.fetch of POST /v1/topics/bench/messages on the broker's app
//   stub    the same app over a broker whose produce answers at once (what the functions
//           layer costs: stub minus hello; bench/http/stub_broker_server.ts over HTTP)
//   broker  Broker.produce() (no HTTP)
//   store   MessageStore.putMessage() (no broker)
// Figures per operation: CPU µs (process.cpuUsage, all threads: steadier than wall time on
// a shared machine), bytes the JS heap allocated (v8/JSC `total_allocated_bytes`, which
// leaves out ArrayBuffer backing stores) and wall µs. The phases alternate for --rounds
// rounds and the median of each is reported, so a busy neighbour skews all of them alike.
// `http_minus_hello_bytes` is what the broker's route adds to any Hono POST.
import { PROPERTY_UNIQ_KEY } from "../../storage/message/message_const.ts";
import process from "node:process";
import v8 from "node:v8";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { Hono } from "hono";
import { commandLine, median, runtimeInfo } from "../support.ts";
import { createApp } from "../../functions/app.ts";
import { functionsLimits } from "../../runtime/protocol/limits.ts";
import { openBenchBroker } from "../in_process_broker.ts";
import { instantBroker } from "./instant_broker.ts";

const flags = commandLine();
const json = flags.has("json");
const ops = flags.number("ops", 20_000);
const rounds = flags.number("rounds", 3);
const inFlight = 64;
const say = (line: string) => process.stderr.write(line + "\n");
const rt = runtimeInfo();

const body = new Uint8Array(1024).fill(97);
const dataDir = mkdtempSync(`${tmpdir()}/mq-bench-alloc-`);
say(
  `# produce_alloc_bench: runtime=${rt.name} ${rt.version} ops=${ops} rounds=${rounds} in_flight=${inFlight} body=1024B dataDir=${dataDir}`,
);

const { broker, config } = await openBenchBroker({
  DATA_DIR: dataDir,
  MQ_FLUSH_DISK_TYPE: "ASYNC_FLUSH",
  MQ_SEGMENT_ZERO_FILL: "false",
});
await broker.upsertTopic("bench", { readQueueNums: 8, writeQueueNums: 8 });
const app = await createApp({
  broker: { get: () => Promise.resolve(broker), failed: () => {} },
  apiKeys: [],
  limits: functionsLimits(config),
  log: () => {},
});
const stubBroker = instantBroker();
const stub = await createApp({
  broker: { get: () => Promise.resolve(stubBroker as never), failed: () => {} },
  apiKeys: [],
  limits: functionsLimits(config),
  log: () => {},
});
// The baseline of bench/http/hello_server.ts.
const hello = new Hono();
hello.post("/v1/topics/:topic/messages", async (c) => {
  const declared = c.req.header("content-length");
  if (declared === undefined || !(Number(declared) <= 4 * 1024 * 1024)) {
    return c.json({ error: "a Content-Length up to 4 MiB is required" }, 413);
  }
  const got = new Uint8Array(await c.req.arrayBuffer());
  return c.json({ ok: true, bytes: got.length, topic: c.req.param("topic") }, 201);
});

const url = "http://127.0.0.1/v1/topics/bench/messages";
const request = () =>
  new Request(url, {
    method: "POST",
    body,
    headers: { "content-length": "1024", "content-type": "application/octet-stream" },
  });
async function answered(res: Response | Promise<Response>, status: number) {
  const r = await res;
  if (r.status !== status) {
    throw new Error(`expected ${status}, got ${r.status}: ${await r.text()}`);
  }
  await r.arrayBuffer();
}
const allPhases: Record<string, () => Promise<unknown>> = {
  hello: () => answered(hello.fetch(request()), 201),
  http: () => answered(app.fetch(request()), 201),
  stub: () => answered(stub.fetch(request()), 201),
  broker: () => broker.produce("bench", { body }),
  store: () =>
    broker.store.putMessage({
      topic: "bench",
      queueId: 0,
      body,
      properties: new Map([[PROPERTY_UNIQ_KEY, "0A0B0C0D0E0F10111213141516171819"]]),
      bornTimestamp: Date.now(),
      bornHost: { ip: new Uint8Array([127, 0, 0, 1]), port: 0 },
      storeHost: { ip: new Uint8Array([127, 0, 0, 1]), port: 0 },
    }),
};

const only = flags.string("only", "");
const phases = only === "" ? allPhases : Object.fromEntries(
  only.split(",").map((name) => {
    if (!(name in allPhases)) {
      throw new Error(`Cannot run phase ${name}: hello, http, stub, broker, store`);
    }
    return [name, allPhases[name]];
  }),
);

async function run(
  once: () => Promise<unknown>,
  n: number,
): Promise<{ bytes: number; us: number; cpu: number }> {
  const before = v8.getHeapStatistics().total_allocated_bytes;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let done = 0; done < n; done += inFlight) {
    const wave = new Array(inFlight);
    for (let i = 0; i < inFlight; i++) wave[i] = once();
    await Promise.all(wave);
  }
  const us = ((performance.now() - started) * 1000) / n;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    bytes: (v8.getHeapStatistics().total_allocated_bytes - before) / n,
    us,
    cpu: (cpu.user + cpu.system) / n,
  };
}

const samples: Record<string, { bytes: number[]; us: number[]; cpu: number[] }> = {};
try {
  say("warming up…");
  for (const once of Object.values(phases)) await run(once, Math.min(ops, 4096));
  for (let r = 0; r < rounds; r++) {
    for (const [name, once] of Object.entries(phases)) {
      const got = await run(once, ops);
      (samples[name] ??= { bytes: [], us: [], cpu: [] }).bytes.push(got.bytes);
      samples[name].us.push(got.us);
      samples[name].cpu.push(got.cpu);
      say(
        `  round ${r + 1} ${name.padEnd(6)} ${got.bytes.toFixed(0)} B/op ${
          got.us.toFixed(2)
        } µs/op ${got.cpu.toFixed(2)} cpu µs/op`,
      );
    }
  }
  const result: Record<string, string | number> = { runtime: `${rt.name} ${rt.version}`, ops };
  for (const [name, s] of Object.entries(samples)) {
    result[`${name}_bytes_per_op`] = Math.round(median(s.bytes));
    result[`${name}_us_per_op`] = Number(median(s.us).toFixed(2));
    result[`${name}_cpu_us_per_op`] = Number(median(s.cpu).toFixed(2));
  }
  if (samples.http && samples.hello) {
    result.http_minus_hello_bytes = Math.round(
      median(samples.http.bytes) - median(samples.hello.bytes),
    );
    result.http_vs_hello_us_ratio = Number(
      (median(samples.http.us) / median(samples.hello.us)).toFixed(3),
    );
  }
  if (json) process.stdout.write(JSON.stringify(result) + "\n");
  else for (const [k, v] of Object.entries(result)) process.stdout.write(`${k.padEnd(24)} ${v}\n`);
} finally {
  await broker.close();
  rmSync(dataDir, { recursive: true, force: true });
}
