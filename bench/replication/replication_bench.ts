// Replication benchmark (issue #7): what a 3-replica group costs a producer, and how long a
// producer waits when the master dies. Same file on Deno and Bun:
//
//   deno run -A --v8-flags=--no-concurrent-array-buffer-sweeping,--no-allocation-site-pretenuring,--max-semi-space-size=16 bench/replication/replication_bench.ts [--quick] [--json]
//   bun run bench/replication/replication_bench.ts [--quick] [--json]
//
// Child processes, all on the runtime the bench runs on (on Deno with the --v8-flags of
// `deno task start`): the brokers (runtime/main.ts, each in a new folder under os.tmpdir()
// or --dir) and one KV Connect host (tools/kv_host/main.ts; --kv-deno runs it on
// Deno instead) that holds every group's lease. Each group has a broker name of its own,
// so no group ever waits for an earlier group's lease to expire.
//
//   [0] catch-up, in process (catch_up.ts): an empty slave catches up with a master holding
//       --catch-up-mib (256; 64 with --quick) MiB, as an ASYNC_FLUSH and as a SYNC_FLUSH
//       slave, against a bare loopback TCP socket moving the same bytes in the same run:
//       catch_up_{async,sync}_vs_tcp_ratio.
//   [1] throughput: --producers (32) loops of single 1 KiB produces over keep-alive fetch
//       (client/mod.ts) for --seconds (10; 5 with --quick) after a --warmup-s (2; 1) warm-up,
//       against (a) a broker on its own (haMode none), (b) a 3-replica group with
//       replicationMode ASYNC, (c) with SYNC, inSyncReplicas 2. Every broker uses
//       ASYNC_FLUSH, so the SYNC figure is the cost of waiting for a slave, not a disk.
//       Each mode starts fresh (new folders, a new group) for each of --rounds rounds (3;
//       1), the mode order rotating per round, and the median round counts:
//       sync_repl_vs_none_ratio = SYNC msgs/s / none msgs/s (async_repl_vs_none_ratio too).
//   [2] failover: a group with replicationMode SYNC (--failover-mode), lease TTL --ttl-ms
//       (2000) and margin --margin-ms (400), under a light load (--failover-producers 4
//       loops, each pausing --failover-pause-ms 20 between produces, following the master
//       and retrying a failed message until some master acknowledges it). --failovers
//       (10; 5) times: SIGKILL the master at a random moment, time the kill -> the next
//       produce acknowledged by another replica, start the killed replica again on its
//       folder and wait until the group is whole (a master, 2 slaves in sync). The target
//       is failover_max_s <= TTL + 1 s. Then every acknowledged message is read back from
//       the final master (lost must be 0: the bench exits 1 otherwise).
//
// Settings and progress go to stderr; with --json the last stdout line is one JSON object.
// Other flags: --segment-mib N (64; smaller than the 1 GiB default, so three replicas on
// one disk do not zero-fill 3 GiB), --body-bytes N (1024), --seed N (1; the random kill
// moments), --progress-s S (2), --dir PATH, --log-level L (info; the brokers' logs, kept
// to explain a slow failover), --keep-logs DIR (write the failover group's logs there).
// bench/README.md explains each figure.
import process from "node:process";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { BrokerError, messageBody, MqClient, type WireMessage } from "../../client/mod.ts";
import { brokerDenoV8Flags, commandLine, count, round, runtimeInfo } from "../support.ts";
import { seededRandom } from "../../storage/testing.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";
import { catchUpPhase } from "./catch_up.ts";

const TOPIC = "repl-bench";
const QUEUES = 8;
const REPLICAS = 3;
const IN_SYNC_REPLICAS = 2;
const KV_TOKEN = "replication-bench-token-0123456789";
/** A throughput run stops with an error after this many refused produces. */
const ERRORS_MAX = 1000;
/** Longest wait for one failover (kill -> next ack) before the bench gives up. */
const FAILOVER_WAIT_MS = 30_000;
/** Longest wait for a group to have a master and its slaves in sync. */
const WHOLE_WAIT_MS = 60_000;
/** Status polls while a producer looks for the master. */
const DISCOVER_POLL_MS = 20;

const flags = commandLine();
const quick = flags.has("quick");
const json = flags.has("json");
const seconds = flags.number("seconds", quick ? 5 : 10);
const warmupS = flags.number("warmup-s", quick ? 1 : 2);
const rounds = Math.round(flags.number("rounds", quick ? 1 : 3));
const producers = Math.round(flags.number("producers", 32));
const bodyBytes = Math.round(flags.number("body-bytes", 1024));
const segmentBytes = Math.round(flags.number("segment-mib", 64) * 1024 * 1024);
const ttlMs = Math.round(flags.number("ttl-ms", 2000));
const marginMs = Math.round(flags.number("margin-ms", 400));
const failovers = Math.round(flags.number("failovers", quick ? 5 : 10));
const failoverMode = flags.string("failover-mode", "SYNC");
const failoverProducers = Math.round(flags.number("failover-producers", 4));
const failoverPauseMs = flags.number("failover-pause-ms", 20);
const seed = Math.round(flags.number("seed", 1));
const progressMs = flags.number("progress-s", 2) * 1000;
const parentDir = flags.string("dir", tmpdir());
const logLevel = flags.string("log-level", "info");
const keepLogs = flags.string("keep-logs", "");
const kvOnDeno = flags.has("kv-deno");
const catchUpMib = flags.number("catch-up-mib", quick ? 64 : 256);
if (!["SYNC", "ASYNC"].includes(failoverMode)) {
  throw new Error(`--failover-mode must be SYNC or ASYNC, not ${failoverMode}`);
}
const FLUSH = "ASYNC_FLUSH";
const runtime = runtimeInfo();
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

const say = (line: string) => process.stderr.write(line + "\n");
const fixed = (value: number, digits = 2) => value.toFixed(digits);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock ms with sub-ms precision, comparable with the brokers' log timestamps. */
const wallMs = () => performance.timeOrigin + performance.now();

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)];
}

function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}

// ---- child processes: every one is tracked by pid and killed by pid at the end ----

interface LogLine {
  atMs: number;
  text: string;
}

class Child {
  readonly lines: string[] = [];
  readonly closed: Promise<void>;
  exited = false;
  #out = "";
  #err = "";

  constructor(
    readonly label: string,
    readonly child: ChildProcess,
    readonly log: LogLine[],
  ) {
    child.stdout!.setEncoding("utf8");
    child.stderr!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      const parts = (this.#out + chunk).split("\n");
      this.#out = parts.pop()!;
      this.lines.push(...parts);
    });
    child.stderr!.on("data", (chunk: string) => {
      const parts = (this.#err + chunk).split("\n");
      this.#err = parts.pop()!;
      const atMs = wallMs();
      for (const text of parts) log.push({ atMs, text });
    });
    this.closed = new Promise((resolve) =>
      child.on("close", () => {
        this.exited = true;
        live.delete(this);
        resolve();
      })
    );
    live.add(this);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** By pid: Deno's ChildProcess.kill() sends only the first signal it is given. */
  async kill(signal: "SIGKILL" | "SIGTERM" = "SIGKILL"): Promise<void> {
    if (!this.exited) {
      try {
        process.kill(this.pid, signal);
      } catch (err) {
        if ((err as { code?: string }).code !== "ESRCH") throw err;
      }
    }
    await this.closed;
  }

  /** The first stdout line that parses as JSON and passes `test`. */
  async waitForJson<T>(what: string, test: (v: Record<string, unknown>) => boolean): Promise<T> {
    const deadline = performance.now() + 60_000;
    for (;;) {
      for (const line of this.lines) {
        if (!line.startsWith("{")) continue;
        try {
          const value = JSON.parse(line);
          if (test(value)) return value as T;
        } catch { /* not JSON */ }
      }
      if (this.exited || performance.now() > deadline) {
        const tail = this.log.slice(-20).map((l) => l.text).join("\n");
        throw new Error(
          `${this.label} ${this.exited ? "exited" : "timed out"} before ${what}:\n${tail}`,
        );
      }
      await sleep(20);
    }
  }
}

const live = new Set<Child>();

function spawnChild(
  label: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  log: LogLine[],
  onDeno = Boolean(g.Deno),
): Child {
  const exe = onDeno && !g.Deno ? "deno" : process.execPath;
  const argv = onDeno
    ? ["run", brokerDenoV8Flags(), "-A", script, ...args]
    : ["run", script, ...args];
  const child = spawn(exe, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Child(label, child, log);
}

interface Broker {
  proc: Child;
  url: string;
  client: MqClient;
}

async function startBroker(
  label: string,
  dataDir: string,
  env: Record<string, string>,
  log: LogLine[],
): Promise<Broker> {
  const proc = spawnChild(label, "runtime/main.ts", [], {
    PORT: "0",
    MQ_NAMESRV_PORT: "0",
    MQ_REMOTING_PORT: "0",
    DATA_DIR: dataDir,
    MQ_LOG_LEVEL: logLevel,
    MQ_FLUSH_DISK_TYPE: FLUSH,
    MQ_SEGMENT_BYTES: String(segmentBytes),
    ...env,
  }, log);
  const { url } = await proc.waitForJson<{ url: string }>(
    "its listening line",
    (v) => v.event === "listening",
  );
  return { proc, url, client: new MqClient({ baseUrl: url }) };
}

// ---- a replicated group (bench-local twin of tests/harness/cluster.ts) ----

interface HaStatus {
  role: string;
  brokerId: number;
  epoch: number;
  maxOffset: number;
  slave?: { state: string; inSync: boolean };
}

interface Replica {
  id: number;
  dataDir: string;
  broker: Broker | undefined;
  /** stderr of every run of this replica, restarts included. */
  log: LogLine[];
}

class Group {
  readonly replicas: Replica[];

  constructor(readonly name: string, readonly kvUrl: string, readonly env: Record<string, string>) {
    this.replicas = Array.from({ length: REPLICAS }, (_, id) => ({
      id,
      dataDir: newDir(`${name}-${id}`),
      broker: undefined,
      log: [],
    }));
  }

  async start(id: number): Promise<void> {
    const r = this.replicas[id];
    r.broker = await startBroker(`${this.name} replica ${id}`, r.dataDir, {
      MQ_HA_MODE: "cluster",
      MQ_BROKER_NAME: this.name,
      MQ_BROKER_ID: String(id),
      MQ_KV: this.kvUrl,
      DENO_KV_ACCESS_TOKEN: KV_TOKEN,
      ...this.env,
    }, r.log);
  }

  async kill(id: number): Promise<void> {
    await this.replicas[id].broker?.proc.kill("SIGKILL");
    this.replicas[id].broker = undefined;
  }

  async status(id: number): Promise<HaStatus | undefined> {
    const b = this.replicas[id].broker;
    if (!b) return undefined;
    try {
      const res = await fetch(`${b.url}/v1/ha/status`, { signal: AbortSignal.timeout(1000) });
      return res.ok ? await res.json() as HaStatus : (await res.body?.cancel(), undefined);
    } catch {
      return undefined;
    }
  }

  statuses(): Promise<(HaStatus | undefined)[]> {
    return Promise.all(this.replicas.map((r) => this.status(r.id)));
  }

  /** Waits for one master and `slaves` slaves replicating in sync; the master's id. */
  async whole(slaves = REPLICAS - 1): Promise<number> {
    const deadline = performance.now() + WHOLE_WAIT_MS;
    for (;;) {
      const all = await this.statuses();
      const masters = all.filter((s) => s?.role === "master");
      const inSync = all.filter((s) =>
        s?.role === "slave" && s.slave?.state === "TRANSFER" && s.slave.inSync
      );
      if (masters.length === 1 && inSync.length >= slaves) return masters[0]!.brokerId;
      if (performance.now() > deadline) {
        throw new Error(
          `${this.name}: no master with ${slaves} slaves in sync in ${WHOLE_WAIT_MS / 1000} s: ${
            JSON.stringify(all)
          }`,
        );
      }
      await sleep(50);
    }
  }

  async close(): Promise<void> {
    for (const r of this.replicas) await this.kill(r.id);
  }
}

const dirs: string[] = [];
let root = "";
function newDir(label: string): string {
  const dir = mkdtempSync(`${root}/${label}-`);
  dirs.push(dir);
  return dir;
}

/** CPU seconds (user + system) of process `pid` so far, from /proc; 0 elsewhere. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ
  } catch {
    return 0;
  }
}

// ---- [1] throughput ----

type Mode = "none" | "async" | "sync";
const MODES: Mode[] = ["none", "async", "sync"];

interface Run {
  mode: Mode;
  round: number;
  msgs: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** `replicas` of the acks: 1 for ASYNC, inSyncReplicas for SYNC, undefined alone. */
  replicasMin: number | undefined;
  brokerCores: number;
  benchCores: number;
}

/** --producers loops of single produces: warm-up, then --seconds measured. */
async function drive(client: MqClient, label: string) {
  const body = new Uint8Array(bodyBytes).fill(0x6d);
  const latencies: number[] = [];
  let stop = false, errors = 0, replicasMin: number | undefined, firstError = "";
  const warmEnd = performance.now() + warmupS * 1000;
  const end = warmEnd + seconds * 1000;
  const loops = Array.from({ length: producers }, async () => {
    while (!stop) {
      const start = performance.now();
      try {
        const r = await client.produce(TOPIC, { body });
        const done = performance.now();
        if (start >= warmEnd && done <= end) latencies.push(done - start);
        if (r.replicas !== undefined) replicasMin = Math.min(replicasMin ?? r.replicas, r.replicas);
      } catch (err) {
        if (!(err instanceof BrokerError)) throw err;
        firstError ||= `${err.code}: ${err.message}`;
        if (++errors > ERRORS_MAX) throw new Error(`${label}: ${errors} produces refused`);
      }
    }
  });
  await sleep(warmupS * 1000);
  let last = latencies.length, lastAt = performance.now();
  while (end - performance.now() > 100) {
    await sleep(Math.max(0, Math.min(progressMs, end - performance.now())));
    const now = performance.now();
    say(
      `    .. ${label}: ${count(latencies.length)} acked, ${
        count((latencies.length - last) / ((now - lastAt) / 1000))
      }/s last ${fixed((now - lastAt) / 1000, 1)} s`,
    );
    last = latencies.length;
    lastAt = now;
  }
  await sleep(Math.max(0, end - performance.now()));
  stop = true;
  await Promise.all(loops);
  if (errors) say(`    .. ${label}: ${errors} produces refused, first: ${firstError}`);
  return { latencies: latencies.sort((a, b) => a - b), errors, replicasMin };
}

async function throughputRun(mode: Mode, roundNo: number, kvUrl: string): Promise<Run> {
  const label = `${mode} r${roundNo}`;
  let group: Group | undefined, alone: Broker | undefined;
  try {
    let target: Broker;
    if (mode === "none") {
      alone = await startBroker(`broker ${label}`, newDir(`none-r${roundNo}`), {}, []);
      target = alone;
    } else {
      group = new Group(`tp-${mode}-r${roundNo}`, kvUrl, {
        MQ_REPLICATION_MODE: mode.toUpperCase(),
        MQ_IN_SYNC_REPLICAS: String(IN_SYNC_REPLICAS),
      });
      await Promise.all(group.replicas.map((r) => group!.start(r.id)));
      target = group.replicas[await group.whole()].broker!;
    }
    await target.client.upsertTopic(TOPIC, { readQueueNums: QUEUES, writeQueueNums: QUEUES });
    const pids = group ? group.replicas.map((r) => r.broker!.proc.pid) : [alone!.proc.pid];
    const cpuBefore = pids.map(cpuSeconds), benchBefore = process.cpuUsage();
    const wallBefore = performance.now();
    const d = await drive(target.client, label);
    const wall = (performance.now() - wallBefore) / 1000;
    const brokerCores = pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - cpuBefore[i], 0) /
      wall;
    const bench = process.cpuUsage(benchBefore);
    const run: Run = {
      mode,
      round: roundNo,
      msgs: d.latencies.length,
      perSecond: d.latencies.length / seconds,
      p50Ms: percentile(d.latencies, 0.5),
      p99Ms: percentile(d.latencies, 0.99),
      errors: d.errors,
      replicasMin: d.replicasMin,
      brokerCores,
      benchCores: (bench.user + bench.system) / 1e6 / wall,
    };
    say(
      `  ${label.padEnd(9)} ${count(run.perSecond).padStart(7)} msgs/s  p50 ${
        fixed(run.p50Ms)
      } ms  p99 ${fixed(run.p99Ms)} ms  acks held by ${run.replicasMin ?? "-"} replica(s)  ${
        fixed(brokerCores)
      } broker cores, ${fixed(run.benchCores)} bench cores`,
    );
    return run;
  } finally {
    await group?.close();
    await alone?.proc.kill("SIGKILL");
  }
}

// ---- [2] failover ----

interface Ack {
  seq: number;
  messageId: string;
  atMs: number;
  from: number;
}

/**
 * --failover-producers loops that follow the master: each message (one seq, one body) is
 * sent until some master acknowledges it. Seqs sent more than once are remembered: only
 * they may show up twice.
 */
class FollowingProducer {
  readonly acks: Ack[] = [];
  readonly retried = new Set<number>();
  /** When a status poll last found a master other than the previous target. */
  foundAtMs = 0;
  #next = 0;
  #running = true;
  #target: { id: number; client: MqClient } | undefined;
  #finding: Promise<void> | undefined;
  #previous = -1;
  readonly #loops: Promise<void>[];

  constructor(readonly group: Group) {
    this.#loops = Array.from({ length: failoverProducers }, () => this.#loop());
  }

  async #loop() {
    while (this.#running) {
      const seq = this.#next++;
      for (let sent = false; this.#running && !sent;) {
        const target = this.#target ?? (await this.#discover(undefined), this.#target);
        if (!target) continue;
        try {
          const r = await target.client.produce(TOPIC, {
            body: bodyOf(seq),
            keys: [`k${seq}`],
            queueId: seq % QUEUES,
          });
          this.acks.push({ seq, messageId: r.messageId, atMs: performance.now(), from: target.id });
          sent = true;
        } catch (err) {
          if (!(err instanceof BrokerError)) throw err;
          this.retried.add(seq);
          await Promise.all([this.#discover(target.id), sleep(DISCOVER_POLL_MS)]);
        }
      }
      await sleep(failoverPauseMs);
    }
  }

  /**
   * Finds the master by polling every replica's status; one search at a time. The replica
   * that failed may still be the master (a SYNC produce refused while a slave reconnects),
   * so it is not excluded; a killed one answers no status.
   */
  #discover(failed: number | undefined): Promise<void> {
    if (this.#target !== undefined && this.#target.id !== failed) return Promise.resolve();
    const previous = this.#target?.id ?? this.#previous;
    this.#target = undefined;
    this.#finding ??= (async () => {
      while (this.#running) {
        const all = await this.group.statuses();
        const m = all.find((s) => s?.role === "master");
        const broker = m && this.group.replicas[m.brokerId].broker;
        if (m && broker) {
          this.#target = { id: m.brokerId, client: new MqClient({ baseUrl: broker.url }) };
          if (m.brokerId !== previous) this.foundAtMs = performance.now();
          this.#previous = m.brokerId;
          break;
        }
        await sleep(DISCOVER_POLL_MS);
      }
      this.#finding = undefined;
    })();
    return this.#finding;
  }

  /** Waits for the first ack after `sinceMs` from a replica other than `not`. */
  async firstAckAfter(sinceMs: number, not: number): Promise<Ack> {
    const deadline = sinceMs + FAILOVER_WAIT_MS;
    for (let i = Math.max(0, this.acks.length - 1);;) {
      for (; i < this.acks.length; i++) {
        const a = this.acks[i];
        if (a.atMs > sinceMs && a.from !== not) return a;
      }
      if (performance.now() > deadline) {
        throw new Error(`No produce acknowledged in ${FAILOVER_WAIT_MS / 1000} s after the kill`);
      }
      await sleep(2);
    }
  }

  async waitForAcks(n: number): Promise<void> {
    const target = this.acks.length + n;
    const deadline = performance.now() + WHOLE_WAIT_MS;
    while (this.acks.length < target) {
      if (performance.now() > deadline) throw new Error(`Only ${this.acks.length}/${target} acks`);
      await sleep(10);
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }
}

/** `seq-N;` padded with dots to --body-bytes. */
function bodyOf(seq: number): string {
  return `seq-${seq};`.padEnd(bodyBytes, ".");
}

interface Failover {
  cycle: number;
  killed: number;
  next: number;
  /** Kill -> the next produce acknowledged by another replica, s. */
  seconds: number;
  /** Kill -> the new master's "became master" log line, s (broker clock, ms). */
  electedS: number | undefined;
  /** Kill -> a status poll of the producer found the new master, s. */
  foundS: number;
}

/** When `log` says "became master" after `sinceWallMs`: ms since then, from its `t`. */
function becameMasterAfter(log: LogLine[], sinceWallMs: number): number | undefined {
  for (const line of log) {
    if (!line.text.includes('"became master"')) continue;
    try {
      const at = Date.parse(JSON.parse(line.text).t);
      if (at >= sinceWallMs - 1) return at - sinceWallMs;
    } catch { /* not JSON */ }
  }
  return undefined;
}

/** The surviving replicas' log lines from the kill to the ack, for a slow failover. */
function logWindow(group: Group, fromWallMs: number, toWallMs: number): string[] {
  const out: string[] = [];
  for (const r of group.replicas) {
    for (const line of r.log) {
      if (line.atMs >= fromWallMs - 50 && line.atMs <= toWallMs + 50) {
        out.push(`      [${r.id}] ${line.text.slice(0, 300)}`);
      }
    }
  }
  return out;
}

/** Every message of TOPIC on `client`, all queues. */
async function readAll(client: MqClient): Promise<WireMessage[]> {
  const out: WireMessage[] = [];
  for (let q = 0; q < QUEUES; q++) {
    for (let offset = 0;;) {
      const got = await client.pull(TOPIC, q, { offset, max: 1000 });
      out.push(...got.messages);
      if (got.messages.length === 0 || got.nextOffset >= got.maxOffset) break;
      offset = got.nextOffset;
    }
  }
  return out;
}

function checkAcked(messages: WireMessage[], producer: FollowingProducer) {
  const dec = new TextDecoder();
  const seqById = new Map<string, number>();
  const copies = new Map<number, number>();
  let corrupt = 0;
  for (const m of messages) {
    const text = dec.decode(messageBody(m));
    const seq = Number(text.slice(4, text.indexOf(";")));
    if (text !== bodyOf(seq) || m.keys?.[0] !== `k${seq}`) corrupt++;
    seqById.set(m.messageId, seq);
    copies.set(seq, (copies.get(seq) ?? 0) + 1);
  }
  let lost = 0;
  for (const a of producer.acks) if (seqById.get(a.messageId) !== a.seq) lost++;
  let duplicates = 0, unexplained = 0;
  for (const [seq, n] of copies) {
    if (n < 2) continue;
    duplicates += n - 1;
    if (!producer.retried.has(seq)) unexplained++;
  }
  return { stored: messages.length, lost, duplicates, unexplained, corrupt };
}

async function failoverPhase(kvUrl: string) {
  const group = new Group("failover", kvUrl, {
    MQ_REPLICATION_MODE: failoverMode,
    MQ_IN_SYNC_REPLICAS: String(IN_SYNC_REPLICAS),
    MQ_LEASE_TTL_MS: String(ttlMs),
    MQ_LEASE_MARGIN_MS: String(marginMs),
    // Slaves copy the topic from the master within half a second, so the first kill does
    // not find a new master that has the messages but not the topic.
    MQ_HA_METADATA_SYNC_MS: "500",
  });
  // The kill moments repeat for one --seed.
  const rand = seededRandom(seed);
  const results: Failover[] = [];
  let producer: FollowingProducer | undefined;
  try {
    await Promise.all(group.replicas.map((r) => group.start(r.id)));
    let master = await group.whole();
    await group.replicas[master].broker!.client.upsertTopic(TOPIC, {
      readQueueNums: QUEUES,
      writeQueueNums: QUEUES,
    });
    await sleep(1500); // three metadata syncs
    producer = new FollowingProducer(group);
    for (let cycle = 1; cycle <= failovers; cycle++) {
      await producer.waitForAcks(20);
      await sleep(rand() * ttlMs); // any moment of the lease's renew cycle
      master = await group.whole();
      const killWallMs = wallMs();
      const killedAt = performance.now();
      await group.kill(master);
      const ack = await producer.firstAckAfter(killedAt, master);
      const f: Failover = {
        cycle,
        killed: master,
        next: ack.from,
        seconds: (ack.atMs - killedAt) / 1000,
        electedS: ((ms) => ms === undefined ? undefined : ms / 1000)(
          becameMasterAfter(group.replicas[ack.from].log, killWallMs),
        ),
        foundS: (producer.foundAtMs - killedAt) / 1000,
      };
      results.push(f);
      const slow = f.seconds > ttlMs / 1000 + 1;
      say(
        `  failover ${cycle}/${failovers}: killed ${f.killed}, replica ${f.next} acked after ${
          fixed(f.seconds, 3)
        } s (became master at ${f.electedS === undefined ? "?" : fixed(f.electedS, 3)} s, found ${
          fixed(f.foundS, 3)
        } s)${slow ? "  SLOW: logs from the kill to the ack follow" : ""}`,
      );
      if (slow) { for (const l of logWindow(group, killWallMs, wallMs())) say(l); }
      await group.start(master);
      const rejoinStart = performance.now();
      await group.whole();
      say(
        `    .. replica ${master} restarted; group whole again ${
          fixed((performance.now() - rejoinStart) / 1000, 1)
        } s after its start; ${
          count(producer.acks.length)
        } acked so far, ${producer.retried.size} retried`,
      );
    }
    await producer.waitForAcks(20);
    await producer.stop();
    master = await group.whole();
    const messages = await readAll(group.replicas[master].broker!.client);
    const check = checkAcked(messages, producer);
    // Every replica ends up holding the master's log (old masters' unacknowledged tails cut).
    let converged = false;
    for (const deadline = performance.now() + 15_000; performance.now() < deadline;) {
      const all = await group.statuses();
      const m = all.find((s) => s?.role === "master");
      if (m && all.every((s) => s !== undefined && s.maxOffset === m.maxOffset)) {
        converged = true;
        break;
      }
      await sleep(100);
    }
    return {
      results,
      check,
      converged,
      acked: producer.acks.length,
      retried: producer.retried.size,
    };
  } catch (err) {
    for (const r of group.replicas) {
      say(`--- replica ${r.id} (last log lines)`);
      for (const l of r.log.slice(-15)) say(`  ${l.text.slice(0, 300)}`);
    }
    throw err;
  } finally {
    await producer?.stop();
    if (keepLogs) {
      mkdirSync(keepLogs, { recursive: true });
      for (const r of group.replicas) {
        writeFileSync(`${keepLogs}/failover-${r.id}.log`, r.log.map((l) => l.text).join("\n"));
      }
    }
    await group.close();
  }
}

// ---- main ----

async function cleanUp(): Promise<void> {
  await Promise.all([...live].map((c) => c.kill("SIGKILL")));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (root) rmSync(root, { recursive: true, force: true });
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    say(`${signal}: stopping the children and removing ${root}`);
    cleanUp().finally(() => process.exit(130));
  });
}

root = mkdtempSync(`${parentDir}/mq-bench-replication-`);
say(
  `# replication_bench: runtime=${runtime.name} ${runtime.version} quick=${quick} producers=${producers} body=${bodyBytes}B queues=${QUEUES} flush=${FLUSH} segment=${
    segmentBytes / 1048576
  }MiB replicas=${REPLICAS} inSyncReplicas=${IN_SYNC_REPLICAS} seconds=${seconds} warmup=${warmupS}s rounds=${rounds} | failover: mode=${failoverMode} leaseTtlMs=${ttlMs} leaseMarginMs=${marginMs} kills=${failovers} producers=${failoverProducers} pause=${failoverPauseMs}ms seed=${seed} | kv host on ${
    kvOnDeno ? "deno" : runtime.name
  } | log level ${logLevel} | dir=${root}`,
);
const totalStart = performance.now();
let failed = false;
try {
  say(`[0] catch-up: an empty slave vs a master holding ${catchUpMib} MiB, in process`);
  const cu = await catchUpPhase({
    platform: await pickPlatform(),
    dir: newDir("catch-up"),
    mib: catchUpMib,
    bodyBytes,
    segmentBytes,
  });
  say(
    `  raw loopback TCP ${count(cu.rawTcpMiBPerS)} MiB/s; ASYNC_FLUSH slave ${
      count(cu.asyncSlaveMiBPerS)
    } MiB/s (${fixed(cu.asyncSlaveMiBPerS / cu.rawTcpMiBPerS)}), SYNC_FLUSH slave ${
      count(cu.syncSlaveMiBPerS)
    } MiB/s (${fixed(cu.syncSlaveMiBPerS / cu.rawTcpMiBPerS)})`,
  );

  const kvLog: LogLine[] = [];
  const kv = spawnChild(
    "KV host",
    "tools/kv_host/main.ts",
    [
      "--token",
      KV_TOKEN,
    ],
    {},
    kvLog,
    kvOnDeno || Boolean(g.Deno),
  );
  const { url: kvUrl } = await kv.waitForJson<{ url: string }>("its url", (v) => !!v.url);

  say(
    `[1] throughput: ${producers} producers x single ${bodyBytes} B produces, ${seconds} s each (after ${warmupS} s warm-up), fresh brokers per run`,
  );
  const runs: Run[] = [];
  for (let r = 1; r <= rounds; r++) {
    const order = MODES.map((_, i) => MODES[(i + r - 1) % MODES.length]);
    for (const mode of order) runs.push(await throughputRun(mode, r, kvUrl));
  }
  const of = (mode: Mode) => runs.filter((r) => r.mode === mode);
  const rate = (mode: Mode) => median(of(mode).map((r) => r.perSecond));
  const fig = (mode: Mode, pick: (r: Run) => number) => round(median(of(mode).map(pick)));
  const roundRatios = (mode: Mode) =>
    Array.from({ length: rounds }, (_, i) =>
      round(
        of(mode).find((r) => r.round === i + 1)!.perSecond /
          of("none").find((r) => r.round === i + 1)!.perSecond,
      ));
  const syncRatio = rate("sync") / rate("none");
  const asyncRatio = rate("async") / rate("none");
  say(
    `  median of ${rounds}: none ${count(rate("none"))}, async ${count(rate("async"))}, sync ${
      count(rate("sync"))
    } msgs/s; async/none ${fixed(asyncRatio)} (rounds ${
      roundRatios("async").join(", ")
    }), sync/none ${fixed(syncRatio)} (rounds ${roundRatios("sync").join(", ")})`,
  );

  say(
    `[2] failover: ${failovers} x SIGKILL of the master, replicationMode ${failoverMode}, lease TTL ${ttlMs} ms, margin ${marginMs} ms`,
  );
  const fo = await failoverPhase(kvUrl);
  const times = fo.results.map((f) => f.seconds).sort((a, b) => a - b);
  const targetS = ttlMs / 1000 + 1;
  const maxS = times.at(-1)!;
  const targetOk = maxS <= targetS;
  const elected = fo.results.map((f) => f.electedS).filter((s) => s !== undefined)
    .sort((a, b) => a - b);
  const afterElected = fo.results.flatMap((f) =>
    f.electedS === undefined ? [] : [f.seconds - f.electedS]
  ).sort((a, b) => a - b);
  say(`  failover s: ${fo.results.map((f) => fixed(f.seconds)).join(" ")}`);
  say(
    `  of which kill -> "became master" p50 ${fixed(percentile(elected, 0.5))} s, max ${
      fixed(elected.at(-1) ?? NaN)
    } s; "became master" -> first ack p50 ${fixed(percentile(afterElected, 0.5))} s, max ${
      fixed(afterElected.at(-1) ?? NaN)
    } s`,
  );
  say(
    `  p50 ${fixed(percentile(times, 0.5))} s, p99 ${fixed(percentile(times, 0.99))} s, max ${
      fixed(maxS)
    } s; target max <= TTL + 1 s = ${fixed(targetS, 1)} s: ${targetOk ? "met" : "MISSED"}`,
  );
  say(
    `  check: ${
      count(fo.acked)
    } acknowledged, ${fo.retried} retried, ${fo.check.stored} stored on the final master: ${fo.check.lost} lost, ${fo.check.duplicates} duplicates (${fo.check.unexplained} of a seq never retried), ${fo.check.corrupt} corrupt; replicas converged: ${fo.converged}`,
  );
  failed = fo.check.lost > 0 || fo.check.corrupt > 0 || fo.check.unexplained > 0;

  const out = {
    runtime: runtime.name,
    runtime_version: runtime.version,
    quick,
    flush: FLUSH,
    producers,
    body_bytes: bodyBytes,
    queues: QUEUES,
    segment_bytes: segmentBytes,
    replicas: REPLICAS,
    in_sync_replicas: IN_SYNC_REPLICAS,
    seconds,
    warmup_s: warmupS,
    rounds,
    kv_runtime: kvOnDeno ? "deno" : runtime.name,
    catch_up_bytes: cu.bytes,
    catch_up_raw_tcp_mib_per_s: round(cu.rawTcpMiBPerS),
    catch_up_async_mib_per_s: round(cu.asyncSlaveMiBPerS),
    catch_up_sync_mib_per_s: round(cu.syncSlaveMiBPerS),
    catch_up_async_vs_tcp_ratio: round(cu.asyncSlaveMiBPerS / cu.rawTcpMiBPerS),
    catch_up_sync_vs_tcp_ratio: round(cu.syncSlaveMiBPerS / cu.rawTcpMiBPerS),
    none_msgs_per_s: round(rate("none")),
    async_msgs_per_s: round(rate("async")),
    sync_msgs_per_s: round(rate("sync")),
    none_p50_ms: fig("none", (r) => r.p50Ms),
    none_p99_ms: fig("none", (r) => r.p99Ms),
    async_p50_ms: fig("async", (r) => r.p50Ms),
    async_p99_ms: fig("async", (r) => r.p99Ms),
    sync_p50_ms: fig("sync", (r) => r.p50Ms),
    sync_p99_ms: fig("sync", (r) => r.p99Ms),
    async_repl_vs_none_ratio: round(asyncRatio),
    sync_repl_vs_none_ratio: round(syncRatio),
    async_ratio_rounds: roundRatios("async"),
    sync_ratio_rounds: roundRatios("sync"),
    none_msgs_per_s_rounds: of("none").map((r) => round(r.perSecond)),
    async_msgs_per_s_rounds: of("async").map((r) => round(r.perSecond)),
    sync_msgs_per_s_rounds: of("sync").map((r) => round(r.perSecond)),
    none_broker_cpu_cores: fig("none", (r) => r.brokerCores),
    async_broker_cpu_cores: fig("async", (r) => r.brokerCores),
    sync_broker_cpu_cores: fig("sync", (r) => r.brokerCores),
    produce_errors: runs.reduce((s, r) => s + r.errors, 0),
    sync_ack_replicas_min: of("sync").reduce((m, r) => Math.min(m, r.replicasMin ?? 0), Infinity),
    failover_mode: failoverMode,
    lease_ttl_ms: ttlMs,
    lease_margin_ms: marginMs,
    failover_kills: failovers,
    failover_producers: failoverProducers,
    failover_pause_ms: failoverPauseMs,
    seed,
    failover_s: fo.results.map((f) => round(f.seconds)),
    failover_elected_s: fo.results.map((f) => f.electedS === undefined ? null : round(f.electedS)),
    failover_min_s: round(times[0]),
    failover_p50_s: round(percentile(times, 0.5)),
    failover_p99_s: round(percentile(times, 0.99)),
    failover_max_s: round(maxS),
    failover_elected_p50_s: elected.length ? round(percentile(elected, 0.5)) : null,
    failover_elected_max_s: elected.length ? round(elected.at(-1)!) : null,
    failover_ack_after_elected_p50_s: afterElected.length
      ? round(percentile(afterElected, 0.5))
      : null,
    failover_ack_after_elected_max_s: afterElected.length ? round(afterElected.at(-1)!) : null,
    failover_target_s: targetS,
    failover_target_ok: targetOk,
    acked: fo.acked,
    retried: fo.retried,
    stored: fo.check.stored,
    lost: fo.check.lost,
    duplicates: fo.check.duplicates,
    corrupt: fo.check.corrupt,
    converged: fo.converged,
    checks_ok: !failed,
    total_s: round((performance.now() - totalStart) / 1000),
  };
  say("");
  for (const [k, v] of Object.entries(out)) {
    say(`  ${k.padEnd(34)} ${Array.isArray(v) ? v.join(", ") : v}`);
  }
  if (json) process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  await cleanUp();
}
if (failed) {
  say("CHECK FAILED: an acknowledged message is missing, corrupt or duplicated without a retry");
  process.exit(1);
}
