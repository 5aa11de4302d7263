// Timer bench: "1,000,000 timers spread over 60 s" on the durable timer store
// (storage/timer/timer_store.ts) on the real disk, beside a raw timer-log write loop and the
// ideal lateness of the same tick, and the same job on the peer, a Deno KV queue with
// `enqueue(value, {delay})` on a local file. Same file on Deno and Bun:
//
//   deno run -A bench/timer/timer_bench.ts [--quick] [--json] [--timers N] [--spread-s S]
//   bun run bench/timer/timer_bench.ts     [--quick] [--json] [--timers N] [--spread-s S]
//
// Other flags: --kv-timers K (20,000; 5,000 with --quick), --kv-concurrency C (16),
// --skip-kv, --tick aligned|interval (aligned, the default: a setTimeout to each slot
// boundary, as the broker's TimerService ticks; interval: a free-running setInterval), --yield-ms N (5), --seed N,
// --dir PATH (parent of the temp folder; os.tmpdir()). --quick: 100,000 timers over 10 s.
// Settings and progress go to stderr; with --json the last stdout line is one JSON object.
// bench/README.md explains each figure.
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { setImmediate } from "node:timers";
import { crc32 } from "node:zlib";
import type { FileHandle, FilePort } from "../../storage/file_port.ts";
import { NodeFilePort } from "../../storage/node_fs_port.ts";
import { seededRandom } from "../../storage/testing.ts";
import { type AdvanceResult, TimerStore } from "../../storage/timer/timer_store.ts";
import { commandLine, count, round, runtimeInfo } from "../support.ts";

const TARGET_LATE_P99_MS = 20;
const TARGET_RSS_MIB = 256;
const RECORD_BYTES = 56; // storage/timer/timer_record.ts
const CHECKPOINT_EVERY_ADDS = 100_000;
const CHECKPOINT_EVERY_MS = 1000; // the broker's timerCheckpointIntervalMs
const KV_DELAY_MIN_MS = 1000;
const KV_DELAY_SPAN_MS = 4000;
const MIB = 1024 * 1024;

const flags = commandLine();
const quick = flags.has("quick");
const json = flags.has("json");
const timers = Math.round(flags.number("timers", quick ? 100_000 : 1_000_000));
const spreadS = flags.number("spread-s", quick ? 10 : 60);
const kvTimers = Math.round(flags.number("kv-timers", quick ? 5_000 : 20_000));
const kvConcurrency = Math.round(flags.number("kv-concurrency", 16));
const skipKv = flags.has("skip-kv");
const tickMode = flags.string("tick", "aligned");
const yieldMs = flags.number("yield-ms", 5);
const seed = Math.round(flags.number("seed", 42));
const parentDir = flags.string("dir", tmpdir());
if (tickMode !== "interval" && tickMode !== "aligned") {
  throw new Error(`Cannot use --tick ${tickMode}: expected interval or aligned`);
}
const runtime = runtimeInfo();
// deno-lint-ignore no-explicit-any
const g = globalThis as any;

const say = (line: string) => process.stderr.write(line + "\n");
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const mib = (bytes: number) => bytes / MIB;
const int = (value: number) => Math.round(value).toLocaleString("en-US");
const fixed = (value: number | null, digits = 1) =>
  value === null || Number.isNaN(value) ? "n/a" : value.toFixed(digits);

/** Value at quantile `q` of an ascending array (NaN if empty). */
function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

/** The finite values of `values`, sorted ascending. */
function sortedFinite(values: ArrayLike<number>): Float64Array {
  const out = new Float64Array(values.length);
  let n = 0;
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i])) out[n++] = values[i];
  return out.subarray(0, n).sort();
}

/** Peak RSS per phase, sampled every 100 ms for the whole run. */
class RssSampler {
  #peak = 0;
  readonly #timer: ReturnType<typeof setInterval>;
  constructor() {
    this.sample();
    this.#timer = setInterval(() => this.sample(), 100);
  }
  sample(): number {
    const rss = process.memoryUsage.rss();
    this.#peak = Math.max(this.#peak, rss);
    return rss;
  }
  /** The peak since the last call (or start), then starts a new phase. */
  takePeak(): number {
    const peak = Math.max(this.#peak, this.sample());
    this.#peak = 0;
    return peak;
  }
  stop(): void {
    clearInterval(this.#timer);
  }
}

/** Counts what the store asks of the disk (reads of chains when slots fire, mostly) and
 * keeps the slowest call of each synchronous kind: those block the event loop. */
class CountingFiles implements FilePort {
  reads = 0;
  readBytes = 0;
  writes = 0;
  writeBytes = 0;
  syncs = 0;
  /** Slowest synchronous call of each kind, ms. */
  readonly slowestMs: Record<string, number> = {};
  constructor(private readonly inner: FilePort) {}

  #timed<T>(kind: string, call: () => T): T {
    const t = performance.now();
    try {
      return call();
    } finally {
      const ms = performance.now() - t;
      if (ms > (this.slowestMs[kind] ?? 0)) this.slowestMs[kind] = ms;
    }
  }

  open(path: string, options?: { create?: boolean }): FileHandle {
    const file = this.#timed("open", () => this.inner.open(path, options));
    // deno-lint-ignore no-this-alias
    const self = this;
    return {
      path: file.path,
      readAt(buffer, offset, length, position) {
        self.reads++;
        self.readBytes += length;
        return self.#timed("read", () => file.readAt(buffer, offset, length, position));
      },
      writeAt(bytes, position) {
        self.writes++;
        self.writeBytes += bytes.byteLength;
        self.#timed("write", () => file.writeAt(bytes, position));
      },
      writeAtAsync(bytes, position) {
        self.writes++;
        self.writeBytes += bytes.byteLength;
        return file.writeAtAsync(bytes, position);
      },
      datasync() {
        self.syncs++;
        return file.datasync();
      },
      truncate: (length) => self.#timed("truncate", () => file.truncate(length)),
      size: () => file.size(),
      close: () => self.#timed("close", () => file.close()),
    };
  }
  exists = (path: string) => this.inner.exists(path);
  list = (dir: string) => this.inner.list(dir);
  mkdirp = (dir: string) => this.inner.mkdirp(dir);
  remove = (path: string) => this.#timed("remove", () => this.inner.remove(path));
  removeTree = (dir: string) => this.inner.removeTree(dir);
  rename = (from: string, to: string) => this.#timed("rename", () => this.inner.rename(from, to));
  /** The fsync runs off the loop; open and close of the folder do not. */
  syncDir = (dir: string) => this.inner.syncDir(dir);
  modifiedMs = (path: string) => this.inner.modifiedMs(path);
}

/**
 * Baseline for the schedule rate: the least a durable timer log can do. The same 56-byte
 * records (fields written with a DataView, crc32 over 52 bytes), gathered 1,024 to a
 * `writeSync` as the timer log does, an fdatasync every CHECKPOINT_EVERY_ADDS and at the
 * end. No wheel, no event-loop turns.
 */
function rawLogBaseline(n: number, path: string, rand: () => number): number {
  const batch = new Uint8Array(1024 * RECORD_BYTES);
  const view = new DataView(batch.buffer);
  const fd = fs.openSync(path, "w+");
  let inBatch = 0, pos = 0;
  const writeBatch = () => {
    const bytes = batch.subarray(0, inBatch * RECORD_BYTES);
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done, pos);
    pos += bytes.length;
    inBatch = 0;
  };
  const start = performance.now();
  try {
    for (let i = 0; i < n; i++) {
      const at = inBatch * RECORD_BYTES;
      const now = Date.now();
      view.setInt32(at, RECORD_BYTES);
      view.setFloat64(at + 4, -1);
      view.setInt32(at + 12, 1);
      view.setFloat64(at + 16, now + 1000 + Math.floor(rand() * spreadS * 1000));
      view.setFloat64(at + 24, i);
      view.setInt32(at + 32, 100);
      view.setFloat64(at + 36, now);
      view.setFloat64(at + 44, 0);
      view.setUint32(at + 52, crc32(batch.subarray(at, at + 52)));
      if (++inBatch === 1024) writeBatch();
      if ((i + 1) % CHECKPOINT_EVERY_ADDS === 0) {
        writeBatch();
        fs.fdatasyncSync(fd);
      }
    }
    writeBatch();
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
  }
  return n / ((performance.now() - start) / 1000);
}

interface TimerFigures {
  raw_log_per_s: number;
  timer_schedule_per_s: number;
  timer_add_only_per_s: number;
  timer_schedule_ratio: number;
  timer_schedule_s: number;
  timer_late_p50_ms: number;
  timer_late_p99_ms: number;
  timer_late_p999_ms: number;
  timer_late_max_ms: number;
  ideal_late_p50_ms: number;
  ideal_late_p99_ms: number;
  timer_late_during_schedule_p99_ms: number | null;
  tick_gap_p99_ms: number;
  tick_gap_max_ms: number;
  /** Seconds from the first tick to the longest gap, and whether a checkpoint ran then. */
  tick_gap_max_at_s: number;
  tick_gap_max_in_checkpoint: boolean;
  advance_ms_p50: number;
  advance_ms_p99: number;
  advance_ms_max: number;
  advance_cpu_s: number;
  checkpoints: number;
  checkpoint_ms_p50: number;
  checkpoint_ms_max: number;
  reads_per_fire: number;
  read_mib: number;
  write_mib: number;
  /** Slowest synchronous file call of each kind during the run (ms): event-loop stalls. */
  fs_sync_max_ms: Record<string, number>;
  timer_early: number;
  timer_duplicates: number;
  timer_missing: number;
  timer_wrong: number;
  timer_pending_after: number;
  rss_base_mib: number;
  timer_rss_mib_1m: number;
  timer_store_memory_mib: number;
  fire_phase_s: number;
}

async function timerPhase(dir: string, rss: RssSampler): Promise<TimerFigures> {
  const rand = seededRandom(seed);
  say(`[1] raw timer-log baseline: ${count(timers)} x 56 B records, fdatasync every 100k…`);
  const rawPerS = rawLogBaseline(timers, join(dir, "raw.log"), seededRandom(seed + 1));
  say(`  ${count(rawPerS)} records/s`);

  // Bookkeeping of the bench, not of the store: about 17 bytes a timer.
  const deliverAt = new Float64Array(timers);
  const late = new Float64Array(timers).fill(NaN);
  const fires = new Uint8Array(timers);
  const tickNows: number[] = [];
  const advanceMs: number[] = [];
  const checkpointMs: number[] = [];
  const checkpointSpans: [number, number][] = []; // Date.now() at start and end
  let fired = 0, early = 0, duplicates = 0, wrong = 0;

  rss.takePeak();
  await sleep(200);
  const rssBase = rss.takePeak();
  const files = new CountingFiles(new NodeFilePort());
  const store = await TimerStore.open({ files, dir: join(dir, "timer"), nowMs: Date.now() });
  const precision = store.config.precisionMs;
  say(
    `[2] timer store: ${count(timers)} timers due now+1 s .. now+${
      1 + spreadS
    } s, tick ${tickMode} every ${precision} ms, checkpoint every ${
      count(CHECKPOINT_EVERY_ADDS)
    } adds and every ${CHECKPOINT_EVERY_MS} ms; RSS before the store ${fixed(mib(rssBase))} MiB`,
  );

  let added = 0;
  let failure: unknown;
  let checkpointChain: Promise<void> = Promise.resolve();
  let checkpointsQueued = 0;
  /** Checkpoints with the count added so far; unless forced, skipped while one is queued. */
  const checkpoint = (force: boolean): Promise<void> => {
    if (!force && checkpointsQueued > 0) return checkpointChain;
    checkpointsQueued++;
    const offset = added;
    checkpointChain = checkpointChain.then(async () => {
      const t = performance.now(), from = Date.now();
      await store.checkpoint(offset);
      checkpointMs.push(performance.now() - t);
      checkpointSpans.push([from, Date.now()]);
      store.deleteRetiredSegments();
    }).catch((err) => {
      failure ??= err;
    }).finally(() => checkpointsQueued--);
    return checkpointChain;
  };

  const take = (result: AdvanceResult, nowMs: number) => {
    const at = Date.now(); // when advance() handed the entries out
    for (const entry of result.entries) {
      const id = entry.commitLogOffset;
      if (!(id >= 0 && id < timers) || deliverAt[id] !== entry.deliverMs) {
        wrong++;
        continue;
      }
      if (entry.deliverMs > nowMs) early++;
      if (fires[id]++ > 0) {
        duplicates++;
        continue;
      }
      late[id] = at - entry.deliverMs;
      fired++;
    }
  };

  let stopped = false;
  let tickTimer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    if (stopped) return;
    try {
      const nowMs = Date.now();
      tickNows.push(nowMs);
      const t = performance.now();
      let result: AdvanceResult;
      let rounds = 0;
      do {
        result = store.advance(nowMs);
        take(result, nowMs);
      } while (
        (result.status === "entry-limit" || result.status === "slot-limit") && ++rounds < 100
      );
      advanceMs.push(performance.now() - t);
      if (result.status === "checkpoint-needed") checkpoint(true);
    } catch (err) {
      failure ??= err;
    }
    if (tickMode === "aligned") tickTimer = setTimeout(tick, precision - (Date.now() % precision));
  };
  const interval = tickMode === "interval" ? setInterval(tick, precision) : undefined;
  if (tickMode === "aligned") tickTimer = setTimeout(tick, precision - (Date.now() % precision));
  const checkpointTimer = setInterval(() => checkpoint(false), CHECKPOINT_EVERY_MS);

  // Schedule: adds in slices of --yield-ms, then one event-loop turn, so the tick, the
  // checkpoint timer and the RSS sampler run meanwhile, as in a broker fed by requests.
  const scheduleStart = performance.now();
  let addMs = 0, lastPrint = scheduleStart, nextCheckpoint = CHECKPOINT_EVERY_ADDS;
  const spreadMs = spreadS * 1000;
  while (added < timers && failure === undefined) {
    const sliceStart = performance.now();
    const sliceEnd = sliceStart + yieldMs;
    do {
      const end = Math.min(timers, added + 256);
      for (; added < end; added++) {
        const nowMs = Date.now();
        const deliverMs = nowMs + 1000 + Math.floor(rand() * spreadMs);
        deliverAt[added] = deliverMs;
        store.add({ deliverMs, commitLogOffset: added, msgSize: 100 }, nowMs);
      }
      if (added >= nextCheckpoint) {
        nextCheckpoint += CHECKPOINT_EVERY_ADDS;
        checkpoint(true);
      }
    } while (added < timers && performance.now() < sliceEnd);
    const now = performance.now();
    addMs += now - sliceStart;
    if (now - lastPrint >= 2000) {
      lastPrint = now;
      const rate = added / ((now - scheduleStart) / 1000);
      say(`    .. scheduled ${count(added)}/${count(timers)}, ${count(rate)}/s so far`);
    }
    await turn();
  }
  await checkpoint(true); // the schedule counts once it is durable
  const scheduleEnd = performance.now();
  const scheduleEndMs = Date.now();
  const scheduleS = (scheduleEnd - scheduleStart) / 1000;
  say(
    `  scheduled ${count(added)} in ${scheduleS.toFixed(2)} s (${
      count(added / scheduleS)
    }/s incl. checkpoints and ticks; add() alone ${count(added / (addMs / 1000))}/s); ${
      int(fired)
    } fired meanwhile; store memoryBytes ${fixed(mib(store.memoryBytes()))} MiB`,
  );

  // Fire: wait for the tick to hand out every timer, or a deadline well past the last one.
  let lastDeliver = 0;
  for (let i = 0; i < added; i++) lastDeliver = Math.max(lastDeliver, deliverAt[i]);
  const deadline = lastDeliver + 10_000;
  say(
    `[3] firing until all ${count(added)} have fired (last due in ${
      ((lastDeliver - Date.now()) / 1000).toFixed(1)
    } s)…`,
  );
  const fireStart = performance.now();
  let lastFirePrint = fireStart;
  while (fired < added && Date.now() < deadline && failure === undefined) {
    await sleep(50);
    const now = performance.now();
    if (now - lastFirePrint >= 5000) {
      lastFirePrint = now;
      say(
        `    .. fired ${int(fired)}/${int(added)}, pending ${int(store.pendingCount)}, rss ${
          fixed(mib(rss.sample()))
        } MiB`,
      );
    }
  }
  stopped = true;
  clearInterval(interval);
  clearTimeout(tickTimer);
  clearInterval(checkpointTimer);
  const fireS = (performance.now() - fireStart) / 1000;
  await checkpoint(true);
  const storeMemory = store.memoryBytes();
  const pendingAfter = store.pendingCount;
  await store.close();
  const rssPeak = rss.takePeak();
  if (failure !== undefined) throw failure;

  // The same tick with a perfect scheduler: each timer at the first tick at or after it.
  const ticks = Float64Array.from(tickNows);
  const ideal = new Float64Array(added);
  for (let i = 0; i < added; i++) {
    const d = deliverAt[i];
    let lo = 0, hi = ticks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ticks[mid] < d) lo = mid + 1;
      else hi = mid;
    }
    ideal[i] = lo < ticks.length ? ticks[lo] - d : NaN;
  }
  const gaps = new Float64Array(Math.max(0, ticks.length - 1));
  let maxGapAt = 1;
  for (let i = 1; i < ticks.length; i++) {
    gaps[i - 1] = ticks[i] - ticks[i - 1];
    if (gaps[i - 1] > gaps[maxGapAt - 1]) maxGapAt = i;
  }
  const gapFrom = ticks[maxGapAt - 1], gapTo = ticks[maxGapAt];
  const gapInCheckpoint = checkpointSpans.some(([a, b]) => a < gapTo && b > gapFrom);
  const duringSchedule: number[] = [];
  for (let i = 0; i < added; i++) {
    if (deliverAt[i] <= scheduleEndMs) duringSchedule.push(late[i]);
  }

  const lateSorted = sortedFinite(late);
  const idealSorted = sortedFinite(ideal);
  const gapsSorted = gaps.sort();
  const advanceSorted = Float64Array.from(advanceMs).sort();
  const checkpointSorted = Float64Array.from(checkpointMs).sort();
  const duringSorted = sortedFinite(duringSchedule);
  const scheduleRate = added / scheduleS;
  return {
    raw_log_per_s: round(rawPerS),
    timer_schedule_per_s: round(scheduleRate),
    timer_add_only_per_s: round(added / (addMs / 1000)),
    timer_schedule_ratio: round(scheduleRate / rawPerS),
    timer_schedule_s: round(scheduleS),
    timer_late_p50_ms: quantile(lateSorted, 0.5),
    timer_late_p99_ms: quantile(lateSorted, 0.99),
    timer_late_p999_ms: quantile(lateSorted, 0.999),
    timer_late_max_ms: lateSorted.length ? lateSorted[lateSorted.length - 1] : NaN,
    ideal_late_p50_ms: quantile(idealSorted, 0.5),
    ideal_late_p99_ms: quantile(idealSorted, 0.99),
    timer_late_during_schedule_p99_ms: duringSorted.length ? quantile(duringSorted, 0.99) : null,
    tick_gap_p99_ms: quantile(gapsSorted, 0.99),
    tick_gap_max_ms: gapsSorted.length ? gapsSorted[gapsSorted.length - 1] : NaN,
    tick_gap_max_at_s: round((gapFrom - ticks[0]) / 1000),
    tick_gap_max_in_checkpoint: gapInCheckpoint,
    advance_ms_p50: round(quantile(advanceSorted, 0.5)),
    advance_ms_p99: round(quantile(advanceSorted, 0.99)),
    advance_ms_max: round(advanceSorted[advanceSorted.length - 1] ?? NaN),
    advance_cpu_s: round(advanceMs.reduce((a, b) => a + b, 0) / 1000),
    checkpoints: checkpointMs.length,
    checkpoint_ms_p50: round(quantile(checkpointSorted, 0.5)),
    checkpoint_ms_max: round(checkpointSorted[checkpointSorted.length - 1] ?? NaN),
    reads_per_fire: round(files.reads / Math.max(1, fired)),
    read_mib: round(mib(files.readBytes)),
    write_mib: round(mib(files.writeBytes)),
    fs_sync_max_ms: Object.fromEntries(
      Object.entries(files.slowestMs).map(([kind, ms]) => [kind, round(ms)]),
    ),
    timer_early: early,
    timer_duplicates: duplicates,
    timer_missing: added - fired,
    timer_wrong: wrong,
    timer_pending_after: pendingAfter,
    rss_base_mib: round(mib(rssBase)),
    timer_rss_mib_1m: round(mib(rssPeak)),
    timer_store_memory_mib: round(mib(storeMemory)),
    fire_phase_s: round(fireS),
  };
}

/** The part of Deno.Kv / @deno/kv's Kv the queue phase uses. */
interface QueueKv {
  enqueue(value: unknown, options?: { delay?: number }): Promise<unknown>;
  listenQueue(handler: (value: unknown) => unknown): Promise<void>;
  close(): void;
}

async function openQueueKv(path: string): Promise<QueueKv> {
  if (g.Deno) {
    if (typeof g.Deno.openKv !== "function") {
      throw new Error("Deno.openKv is missing: run from the repo (deno.json) or --unstable-kv");
    }
    return await g.Deno.openKv(path);
  }
  // Strings only: the limited serializer writes V8's format for strings, null and booleans.
  const { openKv, makeLimitedV8Serializer } = await import("@deno/kv");
  return await openKv(path, makeLimitedV8Serializer()) as unknown as QueueKv;
}

interface KvFigures {
  denokv_timers: number;
  denokv_concurrency: number;
  denokv_schedule_per_s: number | null;
  denokv_late_p50_ms: number | null;
  denokv_late_p99_ms: number | null;
  denokv_late_max_ms: number | null;
  denokv_delivered: number | null;
  denokv_deliver_per_s: number | null;
  denokv_duplicates: number | null;
  denokv_early: number | null;
  denokv_rss_mib: number | null;
  denokv_note: string;
}

async function kvPhase(dir: string, rss: RssSampler): Promise<KvFigures> {
  const base: KvFigures = {
    denokv_timers: kvTimers,
    denokv_concurrency: kvConcurrency,
    denokv_schedule_per_s: null,
    denokv_late_p50_ms: null,
    denokv_late_p99_ms: null,
    denokv_late_max_ms: null,
    denokv_delivered: null,
    denokv_deliver_per_s: null,
    denokv_duplicates: null,
    denokv_early: null,
    denokv_rss_mib: null,
    denokv_note: "",
  };
  const client = g.Deno ? "Deno.openKv" : "@deno/kv openKv + makeLimitedV8Serializer";
  say(
    `[4] peer: ${client} on a local file, ${count(kvTimers)} x enqueue(value, {delay: ${
      KV_DELAY_MIN_MS / 1000
    }..${(KV_DELAY_MIN_MS + KV_DELAY_SPAN_MS) / 1000} s}), ${kvConcurrency} enqueuers…`,
  );
  rss.takePeak();
  const rand = seededRandom(seed + 2);
  const deliverAt = new Float64Array(kvTimers);
  const late = new Float64Array(kvTimers).fill(NaN);
  const seen = new Uint8Array(kvTimers);
  let delivered = 0, duplicates = 0, early = 0, enqueued = 0;
  let firstAt = 0, lastAt = 0;
  let kv: QueueKv;
  try {
    kv = await openQueueKv(join(dir, "peer.kv.sqlite"));
  } catch (err) {
    base.denokv_note = `openKv failed: ${String(err)}`;
    say(`  ${base.denokv_note}`);
    return base;
  }
  let listening: Promise<void> | undefined;
  try {
    listening = kv.listenQueue((value) => {
      const at = Date.now();
      const [id, deliverMs] = String(value).split(":").map(Number);
      if (at < deliverMs) early++;
      if (seen[id]++ > 0) {
        duplicates++;
        return;
      }
      late[id] = at - deliverMs;
      if (delivered++ === 0) firstAt = at;
      lastAt = at;
    });
    listening.catch(() => {});
    const start = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: kvConcurrency }, async () => {
      while (next < kvTimers) {
        const i = next++;
        const delay = KV_DELAY_MIN_MS + Math.floor(rand() * KV_DELAY_SPAN_MS);
        const deliverMs = Date.now() + delay;
        deliverAt[i] = deliverMs;
        await kv.enqueue(`${i}:${deliverMs}`, { delay });
        enqueued++;
      }
    }));
    const enqueueS = (performance.now() - start) / 1000;
    base.denokv_schedule_per_s = round(kvTimers / enqueueS);
    say(
      `  enqueued ${count(kvTimers)} in ${enqueueS.toFixed(2)} s: ${count(kvTimers / enqueueS)}/s`,
    );
    let lastDeliver = 0;
    for (const d of deliverAt) lastDeliver = Math.max(lastDeliver, d);
    const deadline = lastDeliver + 15_000;
    let lastPrint = performance.now();
    while (delivered < kvTimers && Date.now() < deadline) {
      await sleep(50);
      if (performance.now() - lastPrint >= 2000) {
        lastPrint = performance.now();
        say(`    .. delivered ${int(delivered)}/${int(kvTimers)}`);
      }
    }
    // Undelivered by the deadline count at the deadline: the percentiles are then lower bounds.
    const end = Date.now();
    for (let i = 0; i < kvTimers; i++) if (!seen[i]) late[i] = end - deliverAt[i];
    const sorted = sortedFinite(late);
    base.denokv_late_p50_ms = quantile(sorted, 0.5);
    base.denokv_late_p99_ms = quantile(sorted, 0.99);
    base.denokv_late_max_ms = sorted[sorted.length - 1];
    base.denokv_delivered = delivered;
    // Once the backlog builds (16 enqueuers outrun the listener), this is the queue's pace.
    if (delivered > 1) {
      base.denokv_deliver_per_s = round((delivered - 1) / ((lastAt - firstAt) / 1000));
    }
    base.denokv_duplicates = duplicates;
    base.denokv_early = early;
    if (delivered < kvTimers) {
      base.denokv_note = `${kvTimers - delivered} undelivered 15 s after the last was due; ` +
        "lateness figures are lower bounds";
    }
  } catch (err) {
    base.denokv_note = `enqueue/listenQueue failed after ${enqueued} enqueues: ${String(err)}`;
    base.denokv_schedule_per_s = null;
    say(`  ${base.denokv_note}`);
  } finally {
    kv.close();
    if (listening) await Promise.race([listening.catch(() => {}), sleep(2000)]);
    base.denokv_rss_mib = round(mib(rss.takePeak()));
  }
  return base;
}

// --- main ------------------------------------------------------------------------------

const started = performance.now();
const dir = fs.mkdtempSync(join(parentDir, "mq-bench-timer-"));
say(
  `# timer_bench: runtime=${runtime.name} ${runtime.version} timers=${
    count(timers)
  } spread=${spreadS}s` +
    ` kv_timers=${skipKv ? "skipped" : count(kvTimers)} tick=${tickMode} yield=${yieldMs}ms` +
    ` seed=${seed} dir=${dir}${quick ? " (quick)" : ""}`,
);
const rss = new RssSampler();
let t: TimerFigures;
let k: KvFigures | undefined;
try {
  t = await timerPhase(dir, rss);
  if (!skipKv) k = await kvPhase(dir, rss);
} finally {
  rss.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const checksOk = t.timer_early === 0 && t.timer_duplicates === 0 && t.timer_missing === 0 &&
  t.timer_wrong === 0 && t.timer_pending_after === 0;
const out = {
  runtime: runtime.name,
  runtime_version: runtime.version,
  quick,
  timers,
  spread_s: spreadS,
  tick: tickMode,
  total_s: round((performance.now() - started) / 1000),
  ...t,
  target_late_p99_ms: TARGET_LATE_P99_MS,
  target_rss_mib: TARGET_RSS_MIB,
  timer_late_p99_ok: t.timer_late_p99_ms <= TARGET_LATE_P99_MS,
  timer_rss_ok: t.timer_rss_mib_1m <= TARGET_RSS_MIB,
  checks_ok: checksOk,
  ...(k ?? {}),
};

const pad = (s: string) => s.padEnd(34);
say("");
say("figures (same run)");
say(
  `  ${pad("schedule (durable, with ticks)")} ${count(t.timer_schedule_per_s).padStart(11)}/s` +
    `   vs raw 56 B log writes ${count(t.raw_log_per_s).padStart(11)}/s   ratio ${
      t.timer_schedule_ratio.toFixed(2)
    }   (add() alone ${count(t.timer_add_only_per_s)}/s)`,
);
if (k) {
  say(
    `  ${pad("Deno KV enqueue(delay)")} ${
      k.denokv_schedule_per_s === null ? "n/a".padStart(11) : count(k.denokv_schedule_per_s)
        .padStart(11)
    }/s   store / KV ${
      k.denokv_schedule_per_s ? fixed(t.timer_schedule_per_s / k.denokv_schedule_per_s) : "n/a"
    }x`,
  );
}
say(
  `  ${
    pad("lateness p50 / p99 / p99.9 / max")
  } ${t.timer_late_p50_ms} / ${t.timer_late_p99_ms} / ${t.timer_late_p999_ms} / ${t.timer_late_max_ms} ms` +
    `   target p99 <= ${TARGET_LATE_P99_MS}: ${out.timer_late_p99_ok ? "met" : "MISSED"}`,
);
say(
  `  ${
    pad("ideal with the same ticks p50 / p99")
  } ${t.ideal_late_p50_ms} / ${t.ideal_late_p99_ms} ms` +
    `   (tick gap p99 ${t.tick_gap_p99_ms} ms, max ${t.tick_gap_max_ms} ms at +${t.tick_gap_max_at_s} s${
      t.tick_gap_max_in_checkpoint ? ", during a checkpoint" : ""
    })`,
);
if (t.timer_late_during_schedule_p99_ms !== null) {
  say(`  ${pad("lateness p99, due while scheduling")} ${t.timer_late_during_schedule_p99_ms} ms`);
}
if (k) {
  say(
    `  ${pad("Deno KV lateness p50 / p99 / max")} ${fixed(k.denokv_late_p50_ms, 0)} / ${
      fixed(k.denokv_late_p99_ms, 0)
    } / ${fixed(k.denokv_late_max_ms, 0)} ms   delivered ${
      k.denokv_delivered ?? "n/a"
    }/${k.denokv_timers} at ${
      k.denokv_deliver_per_s === null ? "n/a" : count(k.denokv_deliver_per_s)
    }/s, duplicates ${k.denokv_duplicates ?? "n/a"}, early ${k.denokv_early ?? "n/a"}${
      k.denokv_note ? `   note: ${k.denokv_note}` : ""
    }`,
  );
}
say(
  `  ${
    pad("advance() per tick p50 / p99 / max")
  } ${t.advance_ms_p50} / ${t.advance_ms_p99} / ${t.advance_ms_max} ms` +
    `, ${t.advance_cpu_s} s in all; ${t.reads_per_fire} reads/fired timer, ${t.read_mib} MiB read`,
);
say(
  `  ${
    pad("checkpoints")
  } ${t.checkpoints}, p50 ${t.checkpoint_ms_p50} ms, max ${t.checkpoint_ms_max} ms; ${t.write_mib} MiB written`,
);
say(
  `  ${pad("slowest sync file call, ms")} ${
    Object.entries(t.fs_sync_max_ms).sort((a, b) => b[1] - a[1])
      .map(([kind, ms]) => `${kind} ${ms}`).join(", ")
  }   (each blocks the event loop)`,
);
say(
  `  ${pad("peak RSS")} ${fixed(t.timer_rss_mib_1m)} MiB   vs ${
    fixed(t.rss_base_mib)
  } MiB before the store   target <= ${TARGET_RSS_MIB}: ${
    out.timer_rss_ok ? "met" : "MISSED"
  }   (store memoryBytes ${fixed(t.timer_store_memory_mib)} MiB; bench arrays ~${
    fixed(mib(timers * 17))
  } MiB)`,
);
say(
  `  ${
    pad("checks")
  } early ${t.timer_early}, duplicates ${t.timer_duplicates}, missing ${t.timer_missing}, wrong ${t.timer_wrong}, pending after ${t.timer_pending_after}: ${
    checksOk ? "ok" : "FAILED"
  }`,
);

if (json) process.stdout.write(JSON.stringify(out) + "\n");
else {
  for (const [key, value] of Object.entries(out)) {
    const text = typeof value === "object" && value !== null ? JSON.stringify(value) : value;
    process.stdout.write(`${pad(key)} ${text}\n`);
  }
}
if (!checksOk) {
  say("CHECK FAILED: a timer fired early, twice, never, or with the wrong time");
  process.exitCode = 1;
}
