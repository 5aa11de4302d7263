// CPU per single produce over 1 topic and over many, in process, without sockets. Same file
// on Deno and Bun:
//   deno run -A bench/runtime/topics_cpu_bench.ts [--json] [--topics 1000] [--ops 64000] [--rounds 3]
//   bun run bench/runtime/topics_cpu_bench.ts     [--json] …
// --only http,broker runs one layer (with --cpu-prof: a profile of it).
// It opens a broker (defaults, fresh temp folder) and its Hono app in this process, creates
// --topics topics of 8 queues, and drives 1 KiB produces, 64 in flight, each to the next
// topic (t0, t1, …) or all to t0, through two layers:
//   http    app.fetch of POST /v1/topics/<topic>/messages
//   broker  Broker.produce()
// Figures: CPU µs per produce (process.cpuUsage, all threads: a shared machine moves it far
// less than the produce rate of bench/runtime/startup_bench.ts) for 1 topic and for many,
// alternating for --rounds rounds, medians; `<layer>_many_minus_one_cpu_us` is what spreading
// the same produces over --topics topics adds to each. Figures: bench/README.md.
import process from "node:process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { commandLine, median, runtimeInfo } from "../support.ts";
import { createApp } from "../../functions/app.ts";
import { functionsLimits } from "../../runtime/protocol/limits.ts";
import { openBenchBroker } from "../in_process_broker.ts";

const flags = commandLine();
const json = flags.has("json");
const topics = Math.round(flags.number("topics", 1000));
const ops = Math.round(flags.number("ops", 64_000));
const rounds = Math.round(flags.number("rounds", 3));
const only = flags.string("only", "http,broker").split(",");
const inFlight = 64;
const say = (line: string) => process.stderr.write(line + "\n");
const rt = runtimeInfo();

const body = new Uint8Array(1024).fill(97);
const dataDir = mkdtempSync(`${tmpdir()}/mq-bench-topics-`);
say(`# topics_cpu_bench: runtime=${rt.name} ${rt.version} topics=${topics} ops=${ops}`);
const { broker, config } = await openBenchBroker({ DATA_DIR: dataDir });
for (let i = 0; i < topics; i++) {
  await broker.upsertTopic(`t${i}`, { readQueueNums: 8, writeQueueNums: 8 });
}
const app = await createApp({
  broker: { get: () => Promise.resolve(broker), failed: () => {} },
  apiKeys: [],
  limits: functionsLimits(config),
  log: () => {},
});

let next = 0;
const topicOf = (n: number) => `t${next++ % n}`;
async function created(res: Response | Promise<Response>) {
  const r = await res;
  if (r.status !== 201) throw new Error(`expected 201, got ${r.status}: ${await r.text()}`);
  await r.arrayBuffer();
}
const layers: Record<string, (n: number) => Promise<unknown>> = {
  http: (n) =>
    created(app.fetch(
      new Request(`http://127.0.0.1/v1/topics/${topicOf(n)}/messages`, {
        method: "POST",
        body,
        headers: { "content-length": "1024", "content-type": "application/octet-stream" },
      }),
    )),
  broker: (n) => broker.produce(topicOf(n), { body }),
};

/** CPU µs per produce of `count` produces, `inFlight` at a time, over `n` topics. */
async function cpuPerOp(once: (n: number) => Promise<unknown>, n: number, count: number) {
  const before = process.cpuUsage();
  for (let done = 0; done < count; done += inFlight) {
    const wave = new Array(inFlight);
    for (let i = 0; i < inFlight; i++) wave[i] = once(n);
    await Promise.all(wave);
  }
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / count;
}

const result: Record<string, string | number> = { runtime: `${rt.name} ${rt.version}`, topics };
try {
  say("warming up (every topic's queues written once, their files created)…");
  for (const layer of only) await cpuPerOp(layers[layer], topics, Math.max(16_384, topics * 16));
  // A full checkpoint creates every queue's file now (a periodic one would, ~10 s in, inside
  // a round: ~2.5 s of CPU for 8,000 files).
  await broker.store.checkpoint();
  for (const layer of only) {
    const one: number[] = [], many: number[] = [];
    for (let r = 0; r < rounds; r++) {
      one.push(await cpuPerOp(layers[layer], 1, ops));
      many.push(await cpuPerOp(layers[layer], topics, ops));
      say(
        `  ${layer} round ${r + 1}: 1 topic ${one.at(-1)!.toFixed(2)}, ${topics} topics ${
          many.at(-1)!.toFixed(2)
        } CPU µs per produce`,
      );
    }
    result[`${layer}_one_topic_cpu_us`] = Number(median(one).toFixed(2));
    result[`${layer}_many_topics_cpu_us`] = Number(median(many).toFixed(2));
    result[`${layer}_many_minus_one_cpu_us`] = Number((median(many) - median(one)).toFixed(2));
  }
  if (json) process.stdout.write(JSON.stringify(result) + "\n");
  else for (const [k, v] of Object.entries(result)) process.stdout.write(`${k.padEnd(30)} ${v}\n`);
} finally {
  await broker.close();
  rmSync(dataDir, { recursive: true, force: true });
}
