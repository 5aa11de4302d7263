// Webhook push benchmark (issue #6): how fast the broker pushes a backlog to an HTTP
// endpoint, beside how fast that endpoint can be driven at all, and the produce -> webhook
// latency at a modest rate. Same file on Deno and Bun:
//
//   deno run -A --v8-flags=--no-concurrent-array-buffer-sweeping,--no-allocation-site-pretenuring,--max-semi-space-size=16 bench/webhook/push_bench.ts [--json] [--quick]
//   bun run bench/webhook/push_bench.ts [--json] [--quick]
//
// Child processes, all on the runtime the bench runs on (on Deno with the --v8-flags of
// `deno task start`): the receiver (receiver_server.ts, a hello-world endpoint that counts
// requests and keeps each one's webhook-id and latency), the baseline load client
// (load_client.ts), the broker (ASYNC_FLUSH, a new folder under os.tmpdir() or --dir,
// deleted at the end, MQ_WEBHOOK_ALLOW_HOSTS=127.0.0.1) and the paced producer
// (paced_producer.ts).
//
//   [1] baseline: the load client drives the receiver with --concurrency loops (16, the
//       subscription's maxConcurrency) of keep-alive POSTs of 1 KiB for --seconds, with
//       fetch and with node:http (whichever is faster on this runtime counts), once before
//       the push and once after; receiver_rps is the mean of the two.
//   [2] warm-up: a small backlog pushed through a subscription, not timed.
//   [3] push: a topic of 8 queues is preloaded with --messages (100,000; 20,000 with
//       --quick) by batched produces; then a subscription (startFrom earliest,
//       maxConcurrency 16) is created and the clock runs from that request until the
//       receiver has seen every message id. push_vs_receiver_ratio = push rate /
//       receiver_rps. Every delivered webhook-id is checked against the produced ids.
//   [4] latency: a new subscription (startFrom latest) while the paced producer sends
//       --lat-rate msg/s (500) for --lat-seconds (10; 5 with --quick); each body carries its
//       send time, and the receiver measures send -> arrival. Baseline: the same producer
//       posting straight to the receiver, just before (direct_p50_ms, direct_p99_ms).
//
// Cross-process times use `performance.timeOrigin + performance.now()` on each side.
// Other flags: --load-client fetch|node-http|both (both), --progress-s S (5), --dir PATH,
// --broker-cpu-prof DIR (run the broker with --cpu-prof --cpu-prof-md into DIR), --no-settle
// (start the push without waiting for the next segment's background zero-fill to end),
// --dump-latency FILE (phase 4's samples, "sent_ms latency_ms" a line).
// Settings and progress go to stderr; with --json the last stdout line is one JSON object.
// The bench exits 1 when a message was never delivered. bench/README.md explains each figure.
import process from "node:process";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { MqClient } from "../../client/mod.ts";
import {
  brokerDenoV8Flags,
  busyMachineWarning,
  commandLine,
  count,
  idleText,
  machineIdleShare,
  percentile,
  round,
  runtimeInfo,
} from "../support.ts";

const QUEUES = 8;
const PRODUCE_BATCH = 100;
const PRODUCE_CONNECTIONS = 16;
/** No new delivery for this long ends a phase as failed (messages missing). */
const STALL_MS = 30_000;
const POLL_MS = 100;

const flags = commandLine();
const quick = flags.has("quick");
const json = flags.has("json");
const messages = Math.round(flags.number("messages", quick ? 20_000 : 100_000));
const concurrency = Math.round(flags.number("concurrency", 16));
const baselineSeconds = flags.number("seconds", quick ? 3 : 5);
const bodyBytes = Math.round(flags.number("body-bytes", 1024));
const latRate = flags.number("lat-rate", 500);
const latSeconds = flags.number("lat-seconds", quick ? 5 : 10);
const warmupMessages = Math.round(flags.number("warmup", quick ? 2_000 : 5_000));
const progressMs = flags.number("progress-s", 5) * 1000;
const parentDir = flags.string("dir", tmpdir());
const loadClient = flags.string("load-client", "both");
const cpuProfDir = flags.string("broker-cpu-prof", "");
const settle = !flags.has("no-settle");
const dumpLatency = flags.string("dump-latency", "");
if (!["fetch", "node-http", "both"].includes(loadClient)) {
  throw new Error(`--load-client must be fetch, node-http or both, not ${loadClient}`);
}
type LoadClient = "fetch" | "node-http";
/** The baseline's clients. Which drives the receiver faster depends on the runtime (fetch on
 * Bun, node:http on Deno in the first runs), so by default both run and the faster counts. */
const loadClients: LoadClient[] = loadClient === "both"
  ? ["fetch", "node-http"]
  : [loadClient as LoadClient];
const runtime = runtimeInfo();
// deno-lint-ignore no-explicit-any
const g = globalThis as any;

const say = (line: string) => process.stderr.write(line + "\n");
const fixed = (value: number, digits = 2) => value.toFixed(digits);
const clock = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** `run <script>` on this runtime; on Deno with the broker's own V8 flags (deno.json start). */
function runArgs(script: string, extra: string[] = []): string[] {
  return g.Deno ? ["run", brokerDenoV8Flags(), "-A", ...extra, script] : ["run", ...extra, script];
}

interface Server {
  url: string;
  pid?: number;
  stop(): Promise<void>;
}

/** A child server on this runtime; resolves once it prints its "listening" line. */
function startServer(
  name: string,
  script: string,
  env: Record<string, string>,
  extra: string[] = [],
): Promise<Server> {
  const child = spawn(process.execPath, runArgs(script, extra), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let buf = "";
    let up = false;
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      if (up) return;
      buf += chunk;
      const line = buf.split("\n").find((l) => l.includes('"listening"'));
      if (!line) return;
      up = true;
      const closed = new Promise<void>((done) => child.on("close", () => done()));
      resolve({
        url: JSON.parse(line).url,
        pid: child.pid,
        stop: () => {
          child.kill("SIGTERM");
          return closed;
        },
      });
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (!up) reject(new Error(`${name} exited early (${code})`));
    });
  });
}

/** Runs a script on this runtime to its end; its last stdout line, parsed. `onLine` sees
 * every line before. */
function runToEnd<T>(
  script: string,
  args: string[],
  onLine: (line: string) => void = () => {},
): Promise<T> {
  const child = spawn(process.execPath, [...runArgs(script), ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    let seen = 0;
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => {
      out += c;
      const lines = out.split("\n");
      for (; seen < lines.length - 1; seen++) onLine(lines[seen]);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      try {
        resolve(JSON.parse(out.trim().split("\n").at(-1)!));
      } catch {
        reject(new Error(`${script} exited ${code} without a result`));
      }
    });
  });
}

/** CPU seconds (user + system) of process `pid` so far, from /proc; undefined elsewhere. */
function procCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100)
  } catch {
    return undefined;
  }
}

/** CPU cores (CPU s / wall s) each of `pids` used from now until the returned call. */
function cpuMeter(pids: (number | undefined)[]): () => (number | undefined)[] {
  const wall = performance.now();
  const before = pids.map(procCpuSeconds);
  return () => {
    const seconds = (performance.now() - wall) / 1000;
    return pids.map((pid, i) => {
      const now = procCpuSeconds(pid);
      const was = before[i];
      return now === undefined || was === undefined ? undefined : (now - was) / seconds;
    });
  };
}

const cores = (value: number | undefined) => value === undefined ? null : round(value);
const coresText = (value: number | undefined) => value === undefined ? "n/a" : fixed(value);

interface ReceiverStats {
  requests: number;
  distinct: number;
  firstAt: number;
  lastAt: number;
  lastNewAt: number;
}

class ReceiverControl {
  constructor(readonly url: string) {}
  async #get<T>(path: string): Promise<T> {
    const r = await fetch(this.url + path);
    if (!r.ok) throw new Error(`receiver ${path}: ${r.status}`);
    return await r.json() as T;
  }
  stats(): Promise<ReceiverStats> {
    return this.#get("/_stats");
  }
  ids(): Promise<string[]> {
    return this.#get("/_ids");
  }
  latencies(): Promise<{ sendToArrival: number[]; sentAt: number[]; bornToArrival: number[] }> {
    return this.#get("/_latencies");
  }
  async reset(): Promise<void> {
    const r = await fetch(this.url + "/_reset", { method: "POST" });
    await r.arrayBuffer();
  }
}

interface LoadRun {
  client: LoadClient;
  requests: number;
  seconds: number;
  perSecond: number;
  failed: number;
  cpuCores: number;
  receiverCores: number | undefined;
}

interface Baseline {
  /** The faster client's run: the receiver's rate. */
  best: LoadRun;
  runs: LoadRun[];
}

/** The receiver alone, driven by each load client in turn (in `order`); the faster counts. */
async function baseline(
  rx: Server,
  control: ReceiverControl,
  label: string,
  order: LoadClient[],
): Promise<Baseline> {
  const runs: LoadRun[] = [];
  for (const client of order) {
    say(
      `[1] ${label}: receiver alone, ${concurrency} ${client} loops of ${bodyBytes} B POSTs, ${baselineSeconds} s (+1 s warm-up)…`,
    );
    let meter: (() => (number | undefined)[]) | undefined;
    const result = await runToEnd<Omit<LoadRun, "client" | "receiverCores">>(
      here("./load_client.ts"),
      [
        `${rx.url}/hook`,
        String(concurrency),
        "1",
        String(baselineSeconds),
        client,
        String(bodyBytes),
      ],
      (line) => {
        if (line === "measuring") meter = cpuMeter([rx.pid]);
      },
    );
    const [receiverCores] = meter?.() ?? [undefined];
    if (result.failed > 0) throw new Error(`baseline: ${result.failed} requests failed`);
    say(
      `  receiver ${count(result.perSecond)} req/s (${count(result.requests)} in ${
        fixed(result.seconds)
      } s; CPU cores: load client ${fixed(result.cpuCores)}, receiver ${coresText(receiverCores)})`,
    );
    runs.push({ ...result, client, receiverCores });
    await control.reset();
  }
  const best = runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
  return { best, runs };
}

/** Mean rate of one client over the baselines, or null when it did not run. */
function clientRate(client: LoadClient, ...baselines: Baseline[]): number | null {
  const rates = baselines.flatMap((b) => b.runs.filter((r) => r.client === client))
    .map((r) => r.perSecond);
  return rates.length ? round(rates.reduce((a, b) => a + b, 0) / rates.length) : null;
}

/** Produces `total` messages of `bodyBytes` to `topic`; every id, numbered. */
async function preload(mq: MqClient, topic: string, total: number) {
  await mq.upsertTopic(topic, { readQueueNums: QUEUES, writeQueueNums: QUEUES });
  const index = new Map<string, number>();
  const body = "m".repeat(bodyBytes);
  const batches = Math.ceil(total / PRODUCE_BATCH);
  let claimed = 0, done = 0;
  const start = performance.now();
  let lastPrint = start;
  await Promise.all(Array.from({ length: PRODUCE_CONNECTIONS }, async () => {
    while (claimed < batches) {
      const n = Math.min(PRODUCE_BATCH, total - claimed++ * PRODUCE_BATCH);
      const results = await mq.produceBatch(topic, Array.from({ length: n }, () => ({ body })));
      for (const r of results) {
        if (!r.ok) throw new Error(`preload of ${topic} failed: ${r.error.code} ${r.error.detail}`);
        index.set(r.messageId, index.size);
      }
      done += n;
      const now = performance.now();
      if (now - lastPrint >= progressMs) {
        lastPrint = now;
        say(
          `    .. produced ${count(done)}/${count(total)}, ${
            count(done / ((now - start) / 1000))
          }/s`,
        );
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  if (index.size !== total) throw new Error(`preload of ${topic}: ${index.size} distinct ids`);
  return { index, perSecond: total / seconds };
}

/**
 * Waits until the broker has no `*.prealloc` file (storage/commit_log/preallocate.ts: the
 * next CommitLog segment zero-filled in the background after the first one is made, about
 * 11-15 s per GiB) in its data folder, at most 90 s; seconds waited. Part of each of those
 * writes runs on Deno's main thread, so a fill that overlaps the push would be measured
 * with it; a broker that has run a while is mostly between fills. Under ASYNC_FLUSH the
 * broker zero-fills only with MQ_SEGMENT_ZERO_FILL=true (storage/config.ts), so this
 * usually returns at once.
 */
async function settleZeroFill(dir: string): Promise<number> {
  const start = performance.now();
  const filling = () =>
    (readdirSync(dir, { recursive: true }) as string[]).some((f) => f.endsWith(".prealloc"));
  while (filling() && performance.now() - start < 90_000) await sleep(250);
  return (performance.now() - start) / 1000;
}

/** The paced producer (a child process) at --lat-rate for --lat-seconds. */
async function pacedRun(url: string, mode: "broker" | "direct") {
  const r = await runToEnd<{ sent: number; failed: number; ids: string[] }>(
    here("./paced_producer.ts"),
    [url, String(latRate), String(latSeconds), String(bodyBytes), mode],
  );
  if (r.failed > 0) throw new Error(`paced producer (${mode}): ${r.failed} requests failed`);
  return r;
}

function latencyText(sorted: number[]): string {
  return `p50 ${fixed(percentile(sorted, 0.5))} ms, p90 ${fixed(percentile(sorted, 0.9))} ms, p99 ${
    fixed(percentile(sorted, 0.99))
  } ms, max ${fixed(sorted.at(-1) ?? NaN)} ms`;
}

/** Delivered ids against the expected ones. */
function check(expected: Map<string, number>, delivered: string[]) {
  const seen = new Uint8Array(expected.size);
  let distinct = 0, duplicates = 0, unknown = 0;
  for (const id of delivered) {
    const i = expected.get(id);
    if (i === undefined) unknown++;
    else if (seen[i]) duplicates++;
    else {
      seen[i] = 1;
      distinct++;
    }
  }
  return { distinct, duplicates, unknown, missing: expected.size - distinct };
}

/**
 * Polls the receiver until it has seen `total` distinct ids, or none came for STALL_MS.
 * Prints progress every progressMs, with the subscription's lag and requests in flight.
 */
async function awaitDeliveries(
  mq: MqClient,
  rx: ReceiverControl,
  group: string,
  total: number,
  label: string,
  startedAt: number,
): Promise<ReceiverStats> {
  let stats = await rx.stats();
  let lastDistinct = stats.distinct, lastChange = performance.now();
  let lastPrint = performance.now(), printedDistinct = 0;
  while (stats.distinct < total) {
    await sleep(POLL_MS);
    stats = await rx.stats();
    const now = performance.now();
    if (stats.distinct !== lastDistinct) {
      lastDistinct = stats.distinct;
      lastChange = now;
    } else if (now - lastChange > STALL_MS) {
      say(`  ${label}: no new delivery for ${STALL_MS / 1000} s, giving up`);
      break;
    }
    if (now - lastPrint >= progressMs) {
      const view = await mq.getSubscription(group);
      const elapsed = (clock() - startedAt) / 1000;
      say(
        `    .. ${label}: ${count(stats.distinct)}/${count(total)} at ${fixed(elapsed, 1)} s, ${
          count(stats.distinct / elapsed)
        }/s so far, ${
          count((stats.distinct - printedDistinct) / ((now - lastPrint) / 1000))
        }/s last ${
          fixed((now - lastPrint) / 1000, 1)
        } s; broker: lag ${view.stats.lag}, in flight ${view.stats.inFlight}, failed attempts ${view.stats.failedAttempts}`,
      );
      lastPrint = now;
      printedDistinct = stats.distinct;
    }
  }
  return stats;
}

const dataDir = mkdtempSync(`${parentDir}/mq-bench-webhook-`);
const flush = "ASYNC_FLUSH";
const idleBefore = await machineIdleShare();
const busyWarning = busyMachineWarning(idleBefore);
if (busyWarning) say(busyWarning);
say(
  `# push_bench: runtime=${runtime.name} ${runtime.version} quick=${quick} messages=${
    count(messages)
  } concurrency=${concurrency} queues=${QUEUES} body=${bodyBytes}B flush=${flush} baseline=${baselineSeconds}s x2 load-client=${loadClient} latency=${latRate} msg/s x ${latSeconds} s warmup=${
    count(warmupMessages)
  } dataDir=${dataDir} machine_idle_before=${idleText(idleBefore)}${
    cpuProfDir ? ` broker-cpu-prof=${cpuProfDir}` : ""
  }`,
);
const totalStart = performance.now();
const receiver = await startServer("the receiver", here("./receiver_server.ts"), {});
const rx = new ReceiverControl(receiver.url);
let broker: Server | undefined;
let failed = false;
try {
  const before = await baseline(receiver, rx, "baseline before", loadClients);
  await rx.reset();

  broker = await startServer("the broker", here("../../runtime/main.ts"), {
    PORT: "0",
    MQ_NAMESRV_PORT: "0",
    MQ_REMOTING_PORT: "0",
    DATA_DIR: dataDir,
    MQ_LOG_LEVEL: "error",
    MQ_FLUSH_DISK_TYPE: flush,
    MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  }, cpuProfDir ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${cpuProfDir}`] : []);
  const mq = new MqClient({ baseUrl: broker.url });
  const hook = `${receiver.url}/hook`;

  say(`[2] warm-up: ${count(warmupMessages)} messages pushed, not timed…`);
  const warm = await preload(mq, "push-bench-warmup", warmupMessages);
  const warmStart = clock();
  await mq.upsertSubscription("push-bench-warmup", {
    topic: "push-bench-warmup",
    url: hook,
    maxConcurrency: concurrency,
    startFrom: "earliest",
  });
  const warmStats = await awaitDeliveries(
    mq,
    rx,
    "push-bench-warmup",
    warmupMessages,
    "warm-up",
    warmStart,
  );
  await mq.deleteSubscription("push-bench-warmup");
  say(
    `  ${count(warmStats.distinct)} delivered, ${
      count(warmStats.distinct / ((warmStats.lastNewAt - warmStart) / 1000))
    }/s`,
  );
  if (warmStats.distinct < warm.index.size) throw new Error("warm-up: messages missing");
  await rx.reset();

  say(`[3] preload ${count(messages)} x ${bodyBytes} B (${PRODUCE_BATCH} per request)…`);
  const backlog = await preload(mq, "push-bench", messages);
  say(`  ${count(backlog.perSecond)} msgs/s produced`);
  const settleS = settle ? await settleZeroFill(dataDir) : 0;
  if (settle) {
    say(`  the next segment's background zero-fill finished ${fixed(settleS, 1)} s later`);
  }
  say(`[3] push: subscription startFrom earliest, maxConcurrency ${concurrency}…`);
  const meter = cpuMeter([broker.pid, receiver.pid, process.pid]);
  const pushStart = clock();
  await mq.upsertSubscription("push-bench", {
    topic: "push-bench",
    url: hook,
    maxConcurrency: concurrency,
    startFrom: "earliest",
  });
  const pushStats = await awaitDeliveries(mq, rx, "push-bench", messages, "push", pushStart);
  const [brokerCores, receiverCores, benchCores] = meter();
  await sleep(300); // a late duplicate would show now
  const pushView = await mq.getSubscription("push-bench");
  await mq.deleteSubscription("push-bench");
  const pushIds = await rx.ids();
  const pushCheck = check(backlog.index, pushIds);
  const pushSeconds = (pushStats.lastNewAt - pushStart) / 1000;
  const pushRate = pushCheck.distinct / pushSeconds;
  const firstMs = pushStats.firstAt - pushStart;
  const steadyRate = (pushCheck.distinct - 1) / ((pushStats.lastNewAt - pushStats.firstAt) / 1000);
  say(
    `  push ${count(pushRate)} deliveries/s (${count(pushCheck.distinct)} in ${
      fixed(pushSeconds)
    } s; first after ${fixed(firstMs, 1)} ms; ${
      count(steadyRate)
    }/s from the first; CPU cores: broker ${coresText(brokerCores)}, receiver ${
      coresText(receiverCores)
    }, bench ${coresText(benchCores)})`,
  );
  say(
    `  check: ${pushCheck.duplicates} duplicates, ${pushCheck.missing} missing, ${pushCheck.unknown} unknown; broker: delivered ${pushView.stats.delivered}, failed attempts ${pushView.stats.failedAttempts}, retried ${pushView.stats.retried}`,
  );
  await rx.reset();

  const after = await baseline(receiver, rx, "baseline after", [...loadClients].reverse());
  await rx.reset();
  const receiverRps = (before.best.perSecond + after.best.perSecond) / 2;
  say(
    `  push ${count(pushRate)}/s vs receiver ${count(receiverRps)} req/s (mean of ${
      count(before.best.perSecond)
    } (${before.best.client}) and ${count(after.best.perSecond)} (${after.best.client})): ratio ${
      fixed(pushRate / receiverRps)
    }`,
  );

  say(
    `[4] latency baseline: the paced producer posts straight to the receiver, ${latRate}/s for ${latSeconds} s…`,
  );
  const direct = await pacedRun(`${receiver.url}/hook`, "direct");
  const directCheck = check(new Map(direct.ids.map((id, i) => [id, i])), await rx.ids());
  const directLat = (await rx.latencies()).sendToArrival.sort((a, b) => a - b);
  say(
    `  ${count(direct.sent)} sent, ${count(directCheck.distinct)} arrived: ${
      latencyText(directLat)
    }`,
  );
  await rx.reset();

  say(
    `[4] latency: subscription startFrom latest, producer ${latRate} msg/s for ${latSeconds} s…`,
  );
  await mq.upsertTopic("push-latency", { readQueueNums: QUEUES, writeQueueNums: QUEUES });
  await mq.upsertSubscription("push-latency", {
    topic: "push-latency",
    url: hook,
    maxConcurrency: concurrency,
    startFrom: "latest",
  });
  await sleep(200);
  const latStart = clock();
  const produced = await pacedRun(`${broker.url}/v1/topics/push-latency/messages`, "broker");
  const latIndex = new Map(produced.ids.map((id, i) => [id, i]));
  await awaitDeliveries(mq, rx, "push-latency", latIndex.size, "latency", latStart);
  await sleep(300);
  const latView = await mq.getSubscription("push-latency");
  await mq.deleteSubscription("push-latency");
  const latCheck = check(latIndex, await rx.ids());
  const samples = await rx.latencies();
  if (dumpLatency) {
    const lines = samples.sentAt.map((at, i) =>
      `${(at - latStart).toFixed(3)} ${samples.sendToArrival[i].toFixed(3)}`
    );
    writeFileSync(dumpLatency, "# sent_ms_since_start latency_ms\n" + lines.join("\n") + "\n");
    say(`  latency samples written to ${dumpLatency}`);
  }
  const e2e = samples.sendToArrival.sort((a, b) => a - b);
  const born = samples.bornToArrival.sort((a, b) => a - b);
  say(
    `  ${count(produced.sent)} sent, ${count(latCheck.distinct)} delivered: produce -> webhook ${
      latencyText(e2e)
    }; broker accept -> webhook (ms clock) p50 ${fixed(percentile(born, 0.5))}, p99 ${
      fixed(percentile(born, 0.99))
    }`,
  );
  say(
    `  check: ${latCheck.duplicates} duplicates, ${latCheck.missing} missing, ${latCheck.unknown} unknown; failed attempts ${latView.stats.failedAttempts}`,
  );

  failed = pushCheck.missing > 0 || latCheck.missing > 0;
  const out = {
    runtime: runtime.name,
    runtime_version: runtime.version,
    machine_idle_before: idleBefore === undefined ? null : round(idleBefore),
    quick,
    messages,
    concurrency,
    queues: QUEUES,
    body_bytes: bodyBytes,
    flush,
    load_client: loadClient,
    baseline_seconds: baselineSeconds,
    receiver_rps: round(receiverRps),
    receiver_rps_before: round(before.best.perSecond),
    receiver_rps_after: round(after.best.perSecond),
    receiver_rps_client_before: before.best.client,
    receiver_rps_client_after: after.best.client,
    receiver_rps_fetch: clientRate("fetch", before, after),
    receiver_rps_node_http: clientRate("node-http", before, after),
    baseline_load_client_cpu_cores: round((before.best.cpuCores + after.best.cpuCores) / 2),
    baseline_receiver_cpu_cores: cores(
      before.best.receiverCores === undefined || after.best.receiverCores === undefined
        ? undefined
        : (before.best.receiverCores + after.best.receiverCores) / 2,
    ),
    preload_msgs_per_s: round(backlog.perSecond),
    settle_s: settle ? round(settleS) : null,
    push_deliveries_per_s: round(pushRate),
    push_vs_receiver_ratio: round(pushRate / receiverRps),
    push_s: round(pushSeconds),
    push_first_delivery_ms: round(firstMs),
    push_steady_per_s: round(steadyRate),
    push_broker_cpu_cores: cores(brokerCores),
    push_receiver_cpu_cores: cores(receiverCores),
    push_bench_cpu_cores: cores(benchCores),
    push_requests: pushIds.length,
    push_duplicates: pushCheck.duplicates,
    push_missing: pushCheck.missing,
    push_unknown: pushCheck.unknown,
    push_failed_attempts: pushView.stats.failedAttempts,
    lat_rate_msgs_per_s: latRate,
    lat_seconds: latSeconds,
    lat_sent: produced.sent,
    lat_delivered: latCheck.distinct,
    lat_duplicates: latCheck.duplicates,
    lat_missing: latCheck.missing,
    direct_p50_ms: round(percentile(directLat, 0.5)),
    direct_p99_ms: round(percentile(directLat, 0.99)),
    direct_max_ms: round(directLat.at(-1) ?? NaN),
    direct_missing: directCheck.missing,
    push_e2e_p50_ms: round(percentile(e2e, 0.5)),
    push_e2e_p90_ms: round(percentile(e2e, 0.9)),
    push_e2e_p99_ms: round(percentile(e2e, 0.99)),
    push_e2e_max_ms: round(e2e.at(-1) ?? NaN),
    push_born_p50_ms: round(percentile(born, 0.5)),
    push_born_p99_ms: round(percentile(born, 0.99)),
    checks_ok: !failed,
    total_s: round((performance.now() - totalStart) / 1000),
  };
  say("");
  for (const [k, v] of Object.entries(out)) say(`  ${k.padEnd(32)} ${v}`);
  if (json) process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  await broker?.stop();
  await receiver.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
if (failed) {
  say("CHECK FAILED: a message was never delivered");
  process.exit(1);
}
