// The SDK's cost against hand-written fetch, in the same run, on the runtime it runs on:
//
//   deno run -A bench/sdk/sdk_bench.ts [--json] [--seconds 0.5] [--rounds 24] [--backlog 20000]
//   bun run bench/sdk/sdk_bench.ts     [--json] ...
//
// It starts a broker on the same runtime (ASYNC_FLUSH, a temporary folder) and measures:
//   [1] produce, 64 concurrent loops of one 256-byte message per request: MqClient.produce
//       against a plain fetch POST (body bytes, answer read as text and parsed, as the SDK
//       does; --res-json reads it with res.json() instead), in --rounds pairs of
//       alternating --seconds slices; sdk_vs_raw_fetch_produce_ratio is the median of the
//       pairs' SDK ÷ raw, and each side's client CPU per message is beside it.
//   [2] consume a backlog of --backlog messages with concurrency 8: MqClient.subscribe (a
//       no-op handler, ack per message) against a hand-written POP loop over fetch (receive
//       max 8, then ack each handle, the acks concurrently, repeat), each in
//       its own group over the same backlog: consumer_loop_msgs_per_s beside raw_pop_msgs_per_s.
// Settings and progress go to stderr; with --json the last stdout line is one JSON object.
// bench/README.md has the figures.
import process from "node:process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { MqClient } from "../../client/mod.ts";
import { commandLine, median, round, runtimeInfo } from "../support.ts";
import { startBroker } from "../broker_process.ts";

const CONCURRENCY = 64;
const CONSUMERS = 8;
const BODY_BYTES = 256;
const PRELOAD_BATCH = 500;

const flags = commandLine();
const json = flags.has("json");
const seconds = flags.number("seconds", 0.5);
const rounds = Math.round(flags.number("rounds", 24));
const backlog = Math.round(flags.number("backlog", 20_000));
const resJson = flags.has("res-json");
const runtime = runtimeInfo();
const say = (line: string) => process.stderr.write(line + "\n");

/** Runs `op` in `n` loops for `ms`; operations per second. */
async function rate(n: number, ms: number, op: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const start = performance.now();
  const end = start + ms;
  await Promise.all(Array.from({ length: n }, async () => {
    while (performance.now() < end) {
      await op();
      done++;
    }
  }));
  return done / ((performance.now() - start) / 1000);
}

const dir = mkdtempSync(`${tmpdir()}/mq-sdk-bench-`);
const broker = await startBroker(dir);
try {
  const mq = new MqClient({ baseUrl: broker.url });
  const body = new Uint8Array(BODY_BYTES).fill(120);
  const produceUrl = `${broker.url}/v1/topics/produce-bench/messages`;
  const raw = async () => {
    const res = await fetch(produceUrl, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body,
    });
    if (res.status !== 201) throw new Error(`raw produce answered ${res.status}`);
    if (resJson) await res.json();
    else JSON.parse(await res.text());
  };
  const sdk = () => mq.produce("produce-bench", { body });
  say(`sdk_bench on ${runtime.name} ${runtime.version}: broker ${broker.url}`);
  await rate(CONCURRENCY, 1000, raw); // warm-up: topic, connections, JIT
  await rate(CONCURRENCY, 1000, sdk);
  // Short alternating slices, the order flipped every pair, and the median of the pairs'
  // ratios: the machine's load swings within seconds, and a slice pair sees the same load.
  const rawRates: number[] = [];
  const sdkRates: number[] = [];
  const ratios: number[] = [];
  const cpu = { raw: 0, sdk: 0, rawOps: 0, sdkOps: 0 };
  const measure = async (kind: "raw" | "sdk") => {
    const c0 = process.cpuUsage();
    const r = await rate(CONCURRENCY, seconds * 1000, kind === "raw" ? raw : sdk);
    const c = process.cpuUsage(c0);
    cpu[kind] += c.user + c.system;
    cpu[kind === "raw" ? "rawOps" : "sdkOps"] += r * seconds;
    return r;
  };
  for (let r = 0; r < rounds; r++) {
    const first = r % 2 === 0;
    if (first) rawRates.push(await measure("raw"));
    sdkRates.push(await measure("sdk"));
    if (!first) rawRates.push(await measure("raw"));
    ratios.push(sdkRates[r] / rawRates[r]);
    say(
      `[1] pair ${r + 1}: raw fetch ${Math.round(rawRates[r])}/s, SDK ${Math.round(sdkRates[r])}/s`,
    );
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const rawProduce = mean(rawRates);
  const sdkProduce = mean(sdkRates);
  const produceRatio = median(ratios);

  // [2] one backlog, two groups.
  await mq.upsertGroup("raw-pop", { consumeFromWhere: "FIRST_OFFSET" });
  await mq.upsertGroup("sdk-loop", { consumeFromWhere: "FIRST_OFFSET" });
  for (let i = 0; i < backlog; i += PRELOAD_BATCH) {
    const n = Math.min(PRELOAD_BATCH, backlog - i);
    await mq.produceBatch("pop-bench", Array.from({ length: n }, () => ({ body })));
  }
  say(`[2] ${backlog} messages preloaded`);

  const post = async (path: string, payload: unknown) => {
    const res = await fetch(`${broker.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
    });
    if (!res.ok) throw new Error(`${path} answered ${res.status}`);
    return res.status === 204 ? undefined : await res.json();
  };
  // By hand, concurrency 8: receive up to 8, ack each (concurrently), repeat.
  let rawDone = 0;
  const rawStart = performance.now();
  for (let empty = 0; rawDone < backlog && empty < 3;) {
    const { messages } = await post("/v1/groups/raw-pop/receive", {
      topic: "pop-bench",
      max: CONSUMERS,
      waitMs: 200,
    }) as { messages: { receiptHandle: string }[] };
    if (messages.length === 0) empty++;
    await Promise.all(messages.map(async (m) => {
      await post("/v1/groups/raw-pop/ack", { receiptHandle: m.receiptHandle });
      rawDone++;
    }));
  }
  const rawPop = rawDone / ((performance.now() - rawStart) / 1000);
  say(`[2] raw POP: ${rawDone} in ${Math.round(rawPop)}/s`);

  let loopDone = 0;
  const loopStart = performance.now();
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => finish = resolve);
  const sub = mq.subscribe("pop-bench", "sdk-loop", () => {
    if (++loopDone === backlog) finish();
  }, { concurrency: CONSUMERS, waitMs: 200 });
  await finished;
  const loopRate = loopDone / ((performance.now() - loopStart) / 1000);
  await sub.stop();
  say(`[2] SDK subscribe: ${loopDone} in ${Math.round(loopRate)}/s`);

  const result = {
    bench: "sdk",
    runtime: runtime.name,
    version: runtime.version,
    concurrency: CONCURRENCY,
    raw_fetch_produce_msgs_per_s: round(rawProduce),
    sdk_produce_msgs_per_s: round(sdkProduce),
    sdk_vs_raw_fetch_produce_ratio: round(produceRatio),
    raw_fetch_client_cpu_us_per_msg: round(cpu.raw / cpu.rawOps),
    sdk_client_cpu_us_per_msg: round(cpu.sdk / cpu.sdkOps),
    consumer_concurrency: CONSUMERS,
    raw_pop_msgs_per_s: round(rawPop),
    consumer_loop_msgs_per_s: round(loopRate),
    consumer_loop_vs_raw_pop_ratio: round(loopRate / rawPop),
  };
  if (json) console.log(JSON.stringify(result));
  else say(JSON.stringify(result, null, 2));
} finally {
  await broker.stop();
  rmSync(dir, { recursive: true, force: true });
}
