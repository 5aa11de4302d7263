// POP consumption benchmark: receive + ack through the broker's HTTP API, beside plain pull
// of the same backlog in the same run. Same file on Deno and Bun:
//
//   deno run -A bench/pop/pop_bench.ts [--json] [--quick]
//   bun run bench/pop/pop_bench.ts     [--json] [--quick]
//
// It starts the broker as a child process on the runtime it runs on (ASYNC_FLUSH, a new
// folder under os.tmpdir() or --dir, deleted at the end), creates two topics of 8 queues
// and preloads each with batched produces (100 x 1 KiB per request, 16 connections):
//
//   [1] throughput, on a backlog of --backlog messages (50,000; 10,000 with --quick):
//       plain pull (client-side offsets, max 32, 1 loop and 16 loops over the 8 queues),
//       then POP with 1 and with 16 consumers, each in its own group over the same backlog.
//       A POP loop is: receive max 32 (invisibleMs 30000, waitMs 1000), then ack every
//       handle: in one batch-ack request (--ack batch, the default; RocketMQ 5's
//       AckMessageRequest carries many entries too) or one request per handle, sent
//       concurrently (--ack each: then the HTTP requests per message bound the rate).
//   [2] drain: 16 consumers empty a backlog of --drain messages (1,000,000; 100,000 with
//       --quick, and drain_1m_s is then extrapolated linearly; drain_note says so).
//
// Every run counts the distinct message ids it received against the ids the produces
// returned, and reports duplicates, missing and unknown ids and failed acks; the bench
// exits 1 when one is not zero. Other flags: --consumers N (16), --progress-s S (5),
// --dir PATH, --url URL (drive a broker you started yourself, e.g. under a profiler; it
// must be fresh, as the topic and group names are fixed).
// Settings and progress go to stderr; with --json the last stdout line is one JSON object.
// bench/README.md explains each figure.
import process from "node:process";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { MqClient } from "../../client/mod.ts";
import type { PopMessage } from "../../runtime/protocol/types.ts";
import { brokerDenoV8Flags, commandLine, count, round, runtimeInfo } from "../support.ts";
import { brokerEnv } from "../broker_process.ts";

const QUEUES = 8;
const BODY_BYTES = 1024;
const PRODUCE_BATCH = 100;
const PRODUCE_CONNECTIONS = 16;
const MAX = 32;
const INVISIBLE_MS = 30_000;
const WAIT_MS = 1000;
/** A run gives up when no new message came for this long (an unacked one is back by then). */
const STALL_MS = INVISIBLE_MS + 15_000;
const WARMUP_MESSAGES = 5_000;
const ONE_MILLION = 1_000_000;

const flags = commandLine();
const quick = flags.has("quick");
const json = flags.has("json");
const backlogSize = Math.round(flags.number("backlog", quick ? 10_000 : 50_000));
const drainSize = Math.round(flags.number("drain", quick ? 100_000 : ONE_MILLION));
const consumers = Math.round(flags.number("consumers", 16));
const progressMs = flags.number("progress-s", 5) * 1000;
const parentDir = flags.string("dir", tmpdir());
const externalUrl = flags.string("url", "");
const ackMode = flags.string("ack", "batch");
if (ackMode !== "batch" && ackMode !== "each") throw new Error("--ack is batch or each");
const runtime = runtimeInfo();
// deno-lint-ignore no-explicit-any
const g = globalThis as any;

const say = (line: string) => process.stderr.write(line + "\n");
const fixed = (value: number, digits = 2) => value.toFixed(digits);

interface Broker {
  url: string;
  pid?: number;
  stop(): Promise<void>;
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

/** CPU used by this process and the broker over a phase, in cores (CPU s / wall s). */
function cpuMeter(brokerPid: number | undefined) {
  const wall = performance.now();
  const own = process.cpuUsage();
  const broker = procCpuSeconds(brokerPid);
  return (): { client: number; broker: number | undefined } => {
    const seconds = (performance.now() - wall) / 1000;
    const used = process.cpuUsage(own);
    const brokerNow = procCpuSeconds(brokerPid);
    return {
      client: (used.user + used.system) / 1e6 / seconds,
      broker: broker === undefined || brokerNow === undefined
        ? undefined
        : (brokerNow - broker) / seconds,
    };
  };
}

/** The broker as a child process on this runtime; resolves once it prints "listening". */
function startBroker(dataDir: string): Promise<Broker> {
  // deno.json's start task passes these V8 flags; the broker is measured as it is run.
  const argv = g.Deno
    ? ["run", brokerDenoV8Flags(), "-A", "runtime/main.ts"]
    : ["run", "runtime/main.ts"];
  const child = spawn(process.execPath, argv, {
    env: { ...process.env, ...brokerEnv(dataDir) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buf += chunk;
      const line = buf.split("\n").find((l) => l.includes('"listening"'));
      if (line) {
        buf = "";
        resolve({
          url: JSON.parse(line).url,
          pid: child.pid,
          stop: () =>
            new Promise((done) => {
              child.on("close", () => done());
              child.kill("SIGTERM");
            }),
        });
      }
    });
    child.on("error", reject);
    child.on("close", (code) => reject(new Error(`the broker exited early (${code})`)));
  });
}

/** A preloaded topic: every produced message id, numbered, and each queue's offset range. */
class Backlog {
  readonly index = new Map<string, number>();
  readonly minOffset = new Array<number>(QUEUES).fill(Infinity);
  readonly endOffset = new Array<number>(QUEUES).fill(0);
  produceSeconds = 0;
  constructor(readonly topic: string, readonly total: number) {}

  get perSecond(): number {
    return this.total / this.produceSeconds;
  }
}

async function preload(mq: MqClient, topic: string, total: number): Promise<Backlog> {
  const backlog = new Backlog(topic, total);
  await mq.upsertTopic(topic, { readQueueNums: QUEUES, writeQueueNums: QUEUES });
  const body = "m".repeat(BODY_BYTES);
  const batches = Math.ceil(total / PRODUCE_BATCH);
  let claimed = 0;
  let done = 0;
  let lastPrint = performance.now();
  const start = lastPrint;
  await Promise.all(Array.from({ length: PRODUCE_CONNECTIONS }, async () => {
    while (claimed < batches) {
      const n = Math.min(PRODUCE_BATCH, total - claimed++ * PRODUCE_BATCH);
      const results = await mq.produceBatch(topic, Array.from({ length: n }, () => ({ body })));
      for (const r of results) {
        if (!r.ok) throw new Error(`preload of ${topic} failed: ${r.error.code} ${r.error.detail}`);
        backlog.index.set(r.messageId, backlog.index.size);
        backlog.minOffset[r.queueId] = Math.min(backlog.minOffset[r.queueId], r.queueOffset);
        backlog.endOffset[r.queueId] = Math.max(backlog.endOffset[r.queueId], r.queueOffset + 1);
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
  backlog.produceSeconds = (performance.now() - start) / 1000;
  if (backlog.index.size !== total) {
    throw new Error(
      `preload of ${topic}: ${backlog.index.size} distinct ids for ${total} messages`,
    );
  }
  return backlog;
}

/** Which of a backlog's messages came, and how often. */
class Tally {
  readonly #seen: Uint8Array;
  distinct = 0;
  duplicates = 0;
  unknown = 0;
  constructor(readonly backlog: Backlog) {
    this.#seen = new Uint8Array(backlog.total);
  }

  /** Counts one received id; true when it is new. */
  add(id: string): boolean {
    const i = this.backlog.index.get(id);
    if (i === undefined) {
      this.unknown++;
      return false;
    }
    if (this.#seen[i]) {
      this.duplicates++;
      return false;
    }
    this.#seen[i] = 1;
    this.distinct++;
    return true;
  }

  get missing(): number {
    return this.backlog.total - this.distinct;
  }
}

interface RunResult {
  label: string;
  seconds: number;
  perSecond: number;
  tally: Tally;
  requests: number;
  emptyReceives: number;
  ackErrors: number;
  firstAckError?: string;
  /** CPU cores this process and the broker used during the run. */
  cpu: { client: number; broker: number | undefined };
}

/** Prints "label: distinct/total, rate so far, rate of the last interval" every progressMs. */
function progressPrinter(label: string, tally: Tally, extra: () => string) {
  const start = performance.now();
  let last = start;
  let lastCount = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const interval = (tally.distinct - lastCount) / ((now - last) / 1000);
    say(
      `    .. ${label}: ${count(tally.distinct)}/${count(tally.backlog.total)} at ${
        fixed((now - start) / 1000, 1)
      } s, ${count(tally.distinct / ((now - start) / 1000))}/s so far, ${count(interval)}/s last ${
        fixed((now - last) / 1000, 1)
      } s${extra()}`,
    );
    last = now;
    lastCount = tally.distinct;
  }, progressMs);
  return () => clearInterval(timer);
}

/**
 * `loops` consumers of `group` receive (max 32) and ack every handle (concurrently) until
 * every message of the backlog has come and been acked. The clock stops when the last loop
 * has finished its acks.
 */
async function popRun(
  mq: MqClient,
  backlog: Backlog,
  group: string,
  loops: number,
  label: string,
): Promise<RunResult> {
  await mq.upsertGroup(group);
  const tally = new Tally(backlog);
  const stop = new AbortController();
  let requests = 0;
  let emptyReceives = 0;
  let ackErrors = 0;
  let acksInFlight = 0;
  let firstAckError: string | undefined;
  let lastNew = performance.now();
  const stopPrinting = progressPrinter(label, tally, () => `, ${acksInFlight} acks in flight`);
  const cpu = cpuMeter(brokerPid);
  const start = performance.now();
  await Promise.all(Array.from({ length: loops }, async () => {
    while (!stop.signal.aborted) {
      let batch: PopMessage[];
      try {
        batch = await mq.receive(
          group,
          { topic: backlog.topic, max: MAX, invisibleMs: INVISIBLE_MS, waitMs: WAIT_MS },
          stop.signal,
        );
      } catch (err) {
        if (stop.signal.aborted) return;
        throw err;
      }
      requests++;
      if (batch.length === 0) {
        emptyReceives++;
        if (performance.now() - lastNew > STALL_MS) stop.abort();
        continue;
      }
      for (const m of batch) if (tally.add(m.messageId)) lastNew = performance.now();
      acksInFlight += batch.length;
      if (ackMode === "batch") {
        const results = await mq.ackBatch(group, batch.map((m) => m.receiptHandle)).catch((
          err,
        ) => batch.map(() => ({ ok: false as const, error: { code: String(err) } })));
        requests++;
        acksInFlight -= batch.length;
        for (const r of results) {
          if (r.ok) continue;
          ackErrors++;
          firstAckError ??= JSON.stringify(r.error);
        }
      } else {
        await Promise.all(batch.map((m) =>
          mq.ack(group, m.receiptHandle).then(
            () => requests++,
            (err) => {
              ackErrors++;
              firstAckError ??= String(err);
            },
          ).finally(() => acksInFlight--)
        ));
      }
      if (tally.distinct === backlog.total) stop.abort(); // ends the other loops' receives
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const cores = cpu();
  stopPrinting();
  return {
    label,
    seconds,
    perSecond: tally.distinct / seconds,
    tally,
    requests,
    emptyReceives,
    ackErrors,
    firstAckError,
    cpu: cores,
  };
}

/**
 * The baseline: `loops` loops pull the whole backlog with client-side offsets, max 32. They
 * share one cursor that hands out the next 32 offsets of the queues in turn, so 16 loops
 * have 16 pulls in flight as 16 POP consumers have 16 receives.
 */
async function pullRun(
  mq: MqClient,
  backlog: Backlog,
  loops: number,
  label: string,
): Promise<RunResult> {
  const tally = new Tally(backlog);
  const next = backlog.minOffset.map((o) => (Number.isFinite(o) ? o : 0));
  let turn = 0;
  let requests = 0;
  const claim = (): { q: number; offset: number; end: number } | undefined => {
    for (let i = 0; i < QUEUES; i++) {
      const q = turn++ % QUEUES;
      if (next[q] < backlog.endOffset[q]) {
        const offset = next[q];
        next[q] = Math.min(offset + MAX, backlog.endOffset[q]);
        return { q, offset, end: next[q] };
      }
    }
    return undefined;
  };
  const stopPrinting = progressPrinter(label, tally, () => "");
  const cpu = cpuMeter(brokerPid);
  const start = performance.now();
  await Promise.all(Array.from({ length: loops }, async () => {
    for (let c = claim(); c; c = claim()) {
      let offset = c.offset;
      while (offset < c.end) {
        const page = await mq.pull(backlog.topic, c.q, { offset, max: c.end - offset });
        requests++;
        if (page.messages.length === 0) {
          throw new Error(`${label}: queue ${c.q} answered nothing at offset ${offset}`);
        }
        for (const m of page.messages) tally.add(m.messageId);
        offset = page.nextOffset;
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const cores = cpu();
  stopPrinting();
  return {
    label,
    seconds,
    perSecond: tally.distinct / seconds,
    tally,
    requests,
    emptyReceives: 0,
    ackErrors: 0,
    cpu: cores,
  };
}

function report(r: RunResult, baseline?: RunResult): void {
  const vs = baseline
    ? `   vs ${baseline.label} ${count(baseline.perSecond)}/s, ratio ${
      fixed(r.perSecond / baseline.perSecond)
    }`
    : "";
  say(
    `  ${r.label.padEnd(24)} ${count(r.perSecond).padStart(9)} msg/s  (${
      count(r.tally.distinct)
    } in ${fixed(r.seconds)} s, ${count(r.requests)} requests, CPU cores: bench ${
      fixed(r.cpu.client)
    } broker ${r.cpu.broker === undefined ? "n/a" : fixed(r.cpu.broker)})${vs}`,
  );
  const t = r.tally;
  if (t.duplicates || t.missing || t.unknown || r.ackErrors) {
    say(
      `  CHECK ${r.label}: ${t.duplicates} duplicates, ${t.missing} missing, ${t.unknown} unknown, ${r.ackErrors} failed acks${
        r.firstAckError ? ` (first: ${r.firstAckError})` : ""
      }`,
    );
  }
}

const cores = (value: number | undefined) => value === undefined ? null : Number(value.toFixed(2));

const checksOf = (runs: RunResult[]) => ({
  duplicates: runs.reduce((s, r) => s + r.tally.duplicates, 0),
  missing: runs.reduce((s, r) => s + r.tally.missing, 0),
  unknown: runs.reduce((s, r) => s + r.tally.unknown, 0),
  ackErrors: runs.reduce((s, r) => s + r.ackErrors, 0),
});

const dataDir = externalUrl ? "" : mkdtempSync(`${parentDir}/mq-bench-pop-`);
say(
  `# pop_bench: runtime=${runtime.name} ${runtime.version} quick=${quick} backlog=${
    count(backlogSize)
  } drain=${
    count(drainSize)
  } consumers=${consumers} ack=${ackMode} queues=${QUEUES} body=${BODY_BYTES}B max=${MAX} invisibleMs=${INVISIBLE_MS} waitMs=${WAIT_MS} flush=ASYNC_FLUSH ${
    externalUrl ? `url=${externalUrl}` : `dataDir=${dataDir}`
  }`,
);
const totalStart = performance.now();
const broker: Broker = externalUrl
  ? { url: externalUrl, stop: () => Promise.resolve() }
  : await startBroker(dataDir);
const brokerPid = broker.pid;
let failed = false;
try {
  const mq = new MqClient({ baseUrl: broker.url });

  say(`[0] warm-up: ${count(WARMUP_MESSAGES)} messages, pulled and POPped…`);
  const warm = await preload(mq, "pop-bench-warmup", WARMUP_MESSAGES);
  await pullRun(mq, warm, consumers, "warm-up pull");
  await popRun(mq, warm, "pop-bench-warmup", consumers, "warm-up pop");

  say(`[1] preload ${count(backlogSize)} x ${BODY_BYTES} B (${PRODUCE_BATCH} per request)…`);
  const backlog = await preload(mq, "pop-bench", backlogSize);
  say(`  ${count(backlog.perSecond)} msgs/s produced`);
  say(`[1] throughput over the ${count(backlogSize)}-message backlog…`);
  const pull1 = await pullRun(mq, backlog, 1, "pull, 1 loop");
  report(pull1);
  const pop1 = await popRun(mq, backlog, "pop-bench-1", 1, "pop, 1 consumer");
  report(pop1, pull1);
  const pull16 = await pullRun(mq, backlog, consumers, `pull, ${consumers} loops`);
  report(pull16);
  const pop16 = await popRun(mq, backlog, "pop-bench-16", consumers, `pop, ${consumers} consumers`);
  report(pop16, pull16);

  say(`[2] preload ${count(drainSize)} x ${BODY_BYTES} B for the drain…`);
  const drainBacklog = await preload(mq, "pop-drain", drainSize);
  say(`  ${count(drainBacklog.perSecond)} msgs/s produced`);
  const before = await mq.health();
  say(`[2] drain ${count(drainSize)} messages with ${consumers} consumers…`);
  const drain = await popRun(mq, drainBacklog, "pop-drain", consumers, "drain");
  const after = await mq.health();
  report(drain);
  const drain1mS = drain.seconds * (ONE_MILLION / drainSize);
  const drainNote = drainSize === ONE_MILLION
    ? undefined
    : `drain_1m_s is extrapolated linearly from ${drainSize} messages in ${
      fixed(drain.seconds)
    } s, not measured`;
  // CK records, cancel markers and their index entries: what POP adds to the log per message.
  const logBytesPerMsg = (after.commitLogMaxOffset - before.commitLogMaxOffset) / drainSize;
  say(
    `  drain: ${fixed(drain.seconds)} s for ${count(drainSize)}${
      drainNote ? ` (1M extrapolated: ${fixed(drain1mS)} s)` : ""
    }; CommitLog grew ${fixed(logBytesPerMsg, 0)} B per message; timers pending after: ${
      after.scheduled?.timersPending ?? "n/a"
    }`,
  );

  const runs = [pull1, pop1, pull16, pop16, drain];
  const checks = checksOf(runs);
  failed = checks.duplicates + checks.missing + checks.unknown + checks.ackErrors > 0;
  const out = {
    runtime: runtime.name,
    runtime_version: runtime.version,
    quick,
    consumers,
    ack: ackMode,
    backlog_messages: backlogSize,
    produce_msgs_per_s: round(backlog.perSecond),
    pull_msgs_per_s: round(pull1.perSecond),
    pull_msgs_per_s_16: round(pull16.perSecond),
    pop_msgs_per_s_1: round(pop1.perSecond),
    pop_msgs_per_s_16: round(pop16.perSecond),
    pop_vs_pull_ratio_1: round(pop1.perSecond / pull1.perSecond),
    pop_vs_pull_ratio_16: round(pop16.perSecond / pull16.perSecond),
    pop_16_vs_1_ratio: round(pop16.perSecond / pop1.perSecond),
    drain_messages: drainSize,
    drain_s: round(drain.seconds),
    drain_msgs_per_s: round(drain.perSecond),
    drain_1m_s: round(drain1mS),
    ...(drainNote ? { drain_note: drainNote } : {}),
    drain_preload_msgs_per_s: round(drainBacklog.perSecond),
    drain_broker_cpu_cores: cores(drain.cpu.broker),
    drain_bench_cpu_cores: cores(drain.cpu.client),
    pop_16_broker_cpu_cores: cores(pop16.cpu.broker),
    pull_16_broker_cpu_cores: cores(pull16.cpu.broker),
    drain_commitlog_bytes_per_msg: round(logBytesPerMsg),
    timers_pending_after: after.scheduled?.timersPending ?? null,
    duplicates: checks.duplicates,
    missing: checks.missing,
    unknown_ids: checks.unknown,
    ack_errors: checks.ackErrors,
    checks_ok: !failed,
    total_s: round((performance.now() - totalStart) / 1000),
  };
  say("");
  for (const [k, v] of Object.entries(out)) say(`  ${k.padEnd(30)} ${v}`);
  if (json) process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  await broker.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
if (failed) {
  say("CHECK FAILED: a message came twice, never, or unknown, or an ack failed");
  process.exit(1);
}
