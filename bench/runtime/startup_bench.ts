// Cold start, idle memory, many topics and shutdown. Same file on Deno and Bun:
//
//   deno run -A bench/runtime/startup_bench.ts [--json] [--runs 5] [--topics 1000] [--seconds 3]
//   bun run bench/runtime/startup_bench.ts     [--json] …
//
// Every process is a child on the runtime the bench runs on (the broker as deno.json's start
// task runs it: runtime/start.ts, which runs the bundle under dist/ while it is fresh; the
// bench first builds it as scripts/install.sh does), on port 0 with a new data folder under os.tmpdir(), deleted at the end:
//   cold_start_ms            spawn -> first 201 of a produce, empty data dir (median of --runs)
//   listening_ms             spawn -> the broker's "listening" line (same runs)
//   idle_rss_mib             the broker's RSS 2 s after that one produce (median of the runs)
//   cold_start_cpu_ms        CPU time (user + system) the broker used up to that first 201:
//                            less moved by other processes on a shared machine than the time
//   functions_cold_start_ms  the split-mode functions process (functions/start.ts, what an
//                            edge platform cold-starts): spawn -> first answered request (a
//                            produce forwarded to a broker found in the KV route table; the
//                            KV host, tools/kv_host, and the broker run already);
//                            functions_cold_start_cpu_ms its CPU by then, functions_idle_rss_mib
//                            its RSS 2 s later
//   topics_1000_vs_1_ratio   single 1 KiB produces/s over --topics topics of 8 queues, each
//                            produce to the next topic, over the same on 1 topic (t0):
//                            autocannon, 64 connections (topics_load.mjs, Node.js),
//                            --seconds per run, 3 rounds alternating; the ratio of medians
//   topics_1000_vs_1_cpu_ratio the broker's CPU µs per produce (all threads, /proc) over 1
//                            topic ÷ over --topics, medians of the same rounds: steadier than
//                            the rates on a shared machine (produce_*_cpu_us beside it)
//   shutdown_1000_topics_ms  SIGTERM -> exit of that broker (every topic written to); the
//                            restart then finds every acknowledged message (flushed_ok)
//   start_runs               "bundle" or "sources": what the start files ran (dist/ fresh?)
//   *_sources_*              the same with the source entry files (runtime/main.ts,
//                            functions/main.ts), what `deno test` and a checkout without
//                            an install run
//   floor_cold_start_ms      the runtime's own floor in the same run: a bare Hono server
//   floor_idle_rss_mib       (bench/http/hello_server.ts) spawn -> first 201, RSS 2 s later
// --only cold|functions|topics runs one phase; --no-bundle does not build dist/ first (the
// start files then run what is there, fresh, or the sources); --no-sources skips those runs. With
// --json the last stdout line is one JSON object. bench/README.md has the figures.
import process from "node:process";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { MqClient } from "../../client/mod.ts";
import { checkBundle, stampFiles } from "../../runtime/bundle_stamp.ts";
import {
  brokerDenoV8Flags,
  commandLine,
  median,
  processCpuMs,
  round,
  runNodeJson,
  runtimeInfo,
  say,
} from "../support.ts";

const flags = commandLine();
const json = flags.has("json");
const runs = Math.round(flags.number("runs", 5));
const topicCount = Math.round(flags.number("topics", 1000));
const seconds = flags.number("seconds", 3);
/** --only cold|functions|topics: run that phase alone (the others report NaN). */
const only = flags.string("only", "");
const bundled = !flags.has("no-bundle");
const sources = !flags.has("no-sources");
const BROKER = "runtime/start.ts";
const BROKER_SOURCES = "runtime/main.ts";
const FUNCTIONS = "functions/start.ts";
const FUNCTIONS_SOURCES = "functions/main.ts";
const CONNECTIONS = 64;
const BODY = "m".repeat(1024);
const KV_TOKEN = "startup-bench-token-0123456789";
const runtime = runtimeInfo();
// deno-lint-ignore no-explicit-any
const isDeno = !!(globalThis as any).Deno;

interface Child {
  url: string;
  pid: number;
  spawnedAt: number;
  listeningAt: number;
  exited: Promise<number>;
  stop(signal?: NodeJS.Signals): Promise<number>;
  /** It printed {"event":"stopped"}: a graceful exit (the close event's code is not
   * reliable here: Deno's child_process reports a signal after kill()). */
  stoppedCleanly(): boolean;
}

/** Spawns `script` on this runtime; resolves at the JSON line `ready` accepts. */
function start(
  script: string,
  env: Record<string, string>,
  ready: (v: Record<string, unknown>) => boolean = (v) => v.event === "listening",
  args: string[] = [],
): Promise<Child> {
  // The KV host is a Deno tool (tools/kv_host) under either runtime.
  const tool = script.startsWith("tools/");
  const argv = tool || !isDeno ? ["run", ...(tool ? ["-A"] : []), script, ...args] : [
    "run",
    ...(script === BROKER || script === BROKER_SOURCES ? [brokerDenoV8Flags()] : []),
    "-A",
    script,
    ...args,
  ];
  const spawnedAt = performance.now();
  const child = spawn(tool ? "deno" : process.execPath, argv, {
    // Every port ephemeral (remoting's default 9876/10911 too): the machine may be shared.
    env: {
      ...process.env,
      PORT: "0",
      MQ_NAMESRV_PORT: "0",
      MQ_REMOTING_PORT: "0",
      MQ_LOG_LEVEL: "error",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // The exit code, or 128 + signal number as a shell reports a signalled exit.
  const exited = new Promise<number>((r) =>
    child.on("close", (code, signal) => r(code ?? 128 + (signal === "SIGTERM" ? 15 : 9)))
  );
  let stopped = false;
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      if (chunk.includes('"event":"stopped"')) stopped = true;
      buf += chunk;
      for (const line of buf.split("\n")) {
        let v;
        try {
          v = JSON.parse(line);
        } catch {
          continue;
        }
        if (!ready(v)) continue;
        buf = "";
        resolve({
          url: String(v.url),
          pid: child.pid!,
          spawnedAt,
          listeningAt: performance.now(),
          exited,
          stoppedCleanly: () => stopped,
          stop: (signal = "SIGTERM") => {
            child.kill(signal);
            return exited;
          },
        });
        return;
      }
    });
    child.on("error", reject);
    exited.then((code) => reject(new Error(`${script} exited early (${code})`)));
  });
}

async function produce(url: string, topic: string): Promise<number> {
  const res = await fetch(`${url}/v1/topics/${topic}/messages`, { method: "POST", body: BODY });
  await res.arrayBuffer();
  return res.status;
}

/** CPU time (user + system) `pid` has used so far, from /proc (10 ms ticks). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime (fields 14, 15)
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

const dirs: string[] = [];
const newDir = (label: string) => {
  const d = mkdtempSync(`${tmpdir()}/mq-bench-startup-${label}-`);
  dirs.push(d);
  return d;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Builds dist/ from the current sources (scripts/bundle.ts, on Deno under either runtime). */
async function buildBundle(): Promise<void> {
  const child = spawn("deno", ["run", "-A", "scripts/bundle.ts"], { stdio: "inherit" });
  const code = await new Promise<number | null>((r) => child.on("close", r));
  if (code !== 0) throw new Error(`scripts/bundle.ts exited ${code}`);
}

/** Cold start to first 201 and idle RSS of `script`, `runs` times. */
async function coldStarts(script: string) {
  const cold: number[] = [];
  const listening: number[] = [];
  const rss: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const b = await start(script, { DATA_DIR: newDir("cold") });
    const status = await produce(b.url, "first");
    if (status !== 201) throw new Error(`first produce answered ${status}`);
    cold.push(performance.now() - b.spawnedAt);
    cpu.push(cpuMs(b.pid));
    listening.push(b.listeningAt - b.spawnedAt);
    await sleep(2000);
    rss.push(rssMiB(b.pid));
    await b.stop();
    say(
      `  ${script} run ${i + 1}: first 201 at ${cold.at(-1)!.toFixed(0)} ms (CPU ${
        cpu.at(-1)
      } ms), RSS ${rss.at(-1)!.toFixed(1)} MiB`,
    );
  }
  return {
    cold: median(cold),
    listening: median(listening),
    rss: median(rss),
    cpu: median(cpu),
  };
}

/** The split-mode functions process: spawn -> first answered produce (and the CPU it used
 * by then, its RSS 2 s later), `runs` times. */
async function functionsColdStarts(
  script: string,
): Promise<{ cold: number; cpu: number; rss: number }> {
  const kv = await start(
    "tools/kv_host/main.ts",
    {},
    (v) => typeof v.url === "string",
    ["--port", "0", "--token", KV_TOKEN],
  );
  const env = { MQ_KV: kv.url, DENO_KV_ACCESS_TOKEN: KV_TOKEN };
  const broker = await start(BROKER, { ...env, DATA_DIR: newDir("split") });
  try {
    await produce(broker.url, "split");
    const times: number[] = [];
    const cpu: number[] = [];
    const rss: number[] = [];
    for (let i = 0; i < runs; i++) {
      const f = await start(script, env);
      let status = 0;
      for (let tries = 0; tries < 100 && status !== 201; tries++) {
        status = await produce(f.url, "split").catch(() => 0);
      }
      times.push(performance.now() - f.spawnedAt);
      cpu.push(cpuMs(f.pid));
      await sleep(2000);
      rss.push(rssMiB(f.pid));
      await f.stop();
      say(
        `  ${script} run ${i + 1}: first answer (${status}) at ${
          times.at(-1)!.toFixed(0)
        } ms (CPU ${cpu.at(-1)} ms), RSS ${rss.at(-1)!.toFixed(1)} MiB`,
      );
    }
    return { cold: median(times), cpu: median(cpu), rss: median(rss) };
  } finally {
    await broker.stop();
    await kv.stop();
  }
}

/** Produces/s autocannon (topics_load.mjs, Node.js) reaches over topics t0…t(n-1), and the
 * broker's CPU µs per produce meanwhile (all its threads, /proc; NaN elsewhere). */
async function produceRate(
  broker: Child,
  topics: number,
): Promise<{ rate: number; cpuUs: number }> {
  const script = new URL("./topics_load.mjs", import.meta.url).pathname;
  const cpuBefore = processCpuMs(broker.pid);
  const r = await runNodeJson<{ non2xx: number; errors: number; requests_per_s: number }>(
    [script, broker.url, String(topics), String(CONNECTIONS), String(seconds)],
  );
  const cpuAfter = processCpuMs(broker.pid);
  if (r.non2xx > 0 || r.errors > 0) {
    throw new Error(`autocannon saw ${r.non2xx} non-2xx and ${r.errors} errors`);
  }
  const cpuUs = cpuBefore === undefined || cpuAfter === undefined
    ? NaN
    : (cpuAfter - cpuBefore) * 1000 / Math.max(1, r.requests_per_s * seconds);
  return { rate: r.requests_per_s, cpuUs };
}

async function manyTopics() {
  const dataDir = newDir("topics");
  let b = await start(BROKER, { DATA_DIR: dataDir });
  const many = Array.from({ length: topicCount }, (_, i) => `t${i}`);
  for (let i = 0; i < many.length; i += 50) {
    const mq = new MqClient({ baseUrl: b.url });
    await Promise.all(
      many.slice(i, i + 50).map((t) => mq.upsertTopic(t, { readQueueNums: 8, writeQueueNums: 8 })),
    );
  }
  await produceRate(b, topicCount); // warm-up: every topic's queues written to
  // A queue's file is created by the first checkpoint that syncs it (up to
  // store.flushConsumeQueueThoroughInterval, 10 s, after its first message): wait for them, so
  // that the rounds measure produces, not the creation of 8,000 files (~2.5 s of CPU at once,
  // which otherwise fell into round 2; bench/README.md, Round 5).
  const lastQueue = `${dataDir}/store/consumequeue/t${topicCount - 1}/7`;
  const filesBy = performance.now() + 30_000;
  while (!existsSync(lastQueue) || readdirSync(lastQueue).length === 0) {
    if (performance.now() > filesBy) throw new Error(`${lastQueue} has no file after 30 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const one: number[] = [], all: number[] = [], oneCpu: number[] = [], allCpu: number[] = [];
  for (let round = 0; round < 3; round++) {
    const o = await produceRate(b, 1), a = await produceRate(b, topicCount);
    one.push(o.rate);
    all.push(a.rate);
    oneCpu.push(o.cpuUs);
    allCpu.push(a.cpuUs);
    say(
      `  round ${round + 1}: 1 topic ${o.rate.toFixed(0)}/s (${
        o.cpuUs.toFixed(1)
      } CPU µs each), ${topicCount} topics ${a.rate.toFixed(0)}/s (${
        a.cpuUs.toFixed(1)
      } CPU µs each)`,
    );
  }
  // What every topic holds now, then SIGTERM and a restart: all of it must be there.
  const counts = await allOffsets(b.url, many);
  const stopAt = performance.now();
  await b.stop();
  const clean = b.stoppedCleanly();
  const shutdownMs = performance.now() - stopAt;
  b = await start(BROKER, { DATA_DIR: dataDir });
  const after = await allOffsets(b.url, many);
  await b.stop();
  const flushed = counts.every((c, i) => after[i] >= c);
  say(
    `  shutdown: ${clean ? "clean" : "NOT CLEAN"} after ${
      shutdownMs.toFixed(0)
    } ms; restart finds every message: ${flushed}`,
  );
  return {
    one: median(one),
    all: median(all),
    oneCpu: median(oneCpu),
    allCpu: median(allCpu),
    shutdownMs,
    clean,
    flushed,
  };
}

/** maxOffsets() of each topic, 16 topics at a time. */
async function allOffsets(url: string, topics: string[]): Promise<number[]> {
  const out = new Array<number>(topics.length);
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < topics.length) {
      const i = next++;
      out[i] = await maxOffsets(url, topics[i]);
    }
  }));
  return out;
}

/** Messages in `topic` (the sum of its queues' max offsets). */
async function maxOffsets(url: string, topic: string): Promise<number> {
  const mq = new MqClient({ baseUrl: url });
  let sum = 0;
  for (let q = 0; q < 8; q++) sum += (await mq.pull(topic, q, { offset: 0, max: 1 })).maxOffset;
  return sum;
}

say(
  `# startup_bench: runtime=${runtime.name} ${runtime.version} runs=${runs} topics=${topicCount} seconds=${seconds}`,
);
try {
  const skip = (phase: string) => only !== "" && only !== phase;
  const none = { cold: NaN, listening: NaN, rss: NaN, cpu: NaN };
  if (bundled && (!skip("cold") || !skip("functions"))) await buildBundle();
  const root = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");
  const files = await stampFiles();
  const startRuns = [BROKER_SOURCES, FUNCTIONS_SOURCES].every((e) =>
      "bundle" in checkBundle(files, root, "dist", e)
    )
    ? "bundle"
    : "sources";
  say(`    the start files run the ${startRuns}`);
  say("[1] cold start and idle RSS (and a bare Hono server's, the floor)…");
  const floor = skip("cold") ? none : await coldStarts("bench/http/hello_server.ts");
  const c = skip("cold") ? none : await coldStarts(BROKER);
  const cb = skip("cold") || !sources ? none : await coldStarts(BROKER_SOURCES);
  say("[2] split-mode functions cold start…");
  const fNone = { cold: NaN, cpu: NaN, rss: NaN };
  const f = skip("functions") ? fNone : await functionsColdStarts(FUNCTIONS);
  const fb = skip("functions") || !sources ? fNone : await functionsColdStarts(FUNCTIONS_SOURCES);
  say(`[3] ${topicCount} topics vs 1, and shutdown…`);
  const t = skip("topics")
    ? {
      one: NaN,
      all: NaN,
      oneCpu: NaN,
      allCpu: NaN,
      shutdownMs: NaN,
      clean: false,
      flushed: false,
    }
    : await manyTopics();
  const out = {
    runtime: runtime.name,
    runtime_version: runtime.version,
    start_runs: startRuns,
    cold_start_ms: round(c.cold),
    listening_ms: round(c.listening),
    cold_start_cpu_ms: round(c.cpu),
    idle_rss_mib: round(c.rss),
    functions_cold_start_ms: round(f.cold),
    functions_cold_start_cpu_ms: round(f.cpu),
    functions_idle_rss_mib: round(f.rss),
    cold_start_sources_ms: round(cb.cold),
    listening_sources_ms: round(cb.listening),
    cold_start_sources_cpu_ms: round(cb.cpu),
    idle_rss_sources_mib: round(cb.rss),
    functions_cold_start_sources_ms: round(fb.cold),
    functions_cold_start_sources_cpu_ms: round(fb.cpu),
    functions_idle_rss_sources_mib: round(fb.rss),
    floor_cold_start_ms: round(floor.cold),
    floor_idle_rss_mib: round(floor.rss),
    floor_cold_start_cpu_ms: round(floor.cpu),
    produce_1_topic_per_s: round(t.one),
    produce_many_topics_per_s: round(t.all),
    topics: topicCount,
    topics_1000_vs_1_ratio: round(t.all / t.one),
    // CPU per produce, 1 topic over many (medians): the ratio without the neighbours' share
    // of the 2 cores, which moves the rates 2-10x on a shared machine.
    produce_1_topic_cpu_us: round(t.oneCpu),
    produce_many_topics_cpu_us: round(t.allCpu),
    topics_1000_vs_1_cpu_ratio: round(t.oneCpu / t.allCpu),
    shutdown_1000_topics_ms: round(t.shutdownMs),
    shutdown_clean: t.clean,
    flushed_ok: t.flushed,
  };
  say("");
  for (const [k, v] of Object.entries(out)) {
    say(`  ${k.padEnd(28)} ${v}`);
  }
  if (json) {
    process.stdout.write(JSON.stringify(out) + "\n");
  }
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
