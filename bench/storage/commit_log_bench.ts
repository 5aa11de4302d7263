// CommitLog bench: appends (ASYNC_FLUSH and SYNC_FLUSH), ConsumeQueue reads and crash
// recovery of the MessageStore on the real disk, each figure beside a baseline measured
// in the same run (STYLE.md "Benchmarks"; reference/performance.md for the ceilings).
//
//   deno run -A bench/storage/commit_log_bench.ts [--json] [--quick] [--segment-mib N]
//   bun run bench/storage/commit_log_bench.ts     [--json] [--quick] [--segment-mib N]
//
// Other flags: --msg-bytes N (body size, 1024), --recovery-mib N (256; 64 with --quick),
// --dir PATH (parent of the temp folder; os.tmpdir()), --yield-ms N (5). With --json the
// last line is one JSON object. bench/README.md explains each figure.
import * as fs from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { MIB } from "../../storage/config.ts";
import type { MessageStore } from "../../storage/message_store.ts";
import { seededRandom, storeCore, testMessage } from "../../storage/testing.ts";
import { rawReadLoop, rawScan, rawWriteLoop, serialFsyncLoop } from "./baselines.ts";
import { printSettings, readSettings, type Settings } from "./commit_log_settings.ts";
import {
  crashAndRecover,
  makeStore,
  quiesce,
  readQueue,
  runAppenders,
  settleBackgroundWrites,
} from "./store_phases.ts";
import {
  appenders as plural,
  compareLine,
  count,
  type Rate,
  ratio,
  round,
  runtimeInfo,
  say,
} from "../support.ts";

type Figures = Record<string, number | string | boolean>;

/** The 64-appender ASYNC_FLUSH run fills this queue; the read phase reads it back. */
const READ_TOPIC = "BenchAsync64";

/** Size on disk of the first record of queue 0 of `topic` (body + header + topic). */
function firstRecordBytes(store: MessageStore, topic: string): number {
  const first = store.getMessage(topic, 0, store.getMinOffsetInQueue(topic, 0), {
    maxMsgNums: 1,
    maxBytes: 1 << 20,
  });
  return first.messages[0]?.record.totalSize ?? 0;
}

/** Mean of a baseline measured before and after the store run it is compared with. */
function meanRate(before: Rate, after: Rate): Rate {
  const ops = before.ops + after.ops, seconds = before.seconds + after.seconds;
  return { ops, seconds, perSecond: ops / seconds };
}

interface Run {
  s: Settings;
  dir: string;
  body: Uint8Array;
  out: Figures;
}

interface Stores {
  async: MessageStore;
  sync: MessageStore;
}

/**
 * Opens the ASYNC_FLUSH and SYNC_FLUSH stores and warms their put paths (JIT).
 *
 * The first append to a fresh SYNC_FLUSH store (ASYNC_FLUSH ones do not zero-fill by
 * default: storage/config.ts zeroFillSegments) creates its first segment and starts
 * zero-filling the *next* one in the background (storage/commit_log/preallocate.ts), paced to stay
 * gentle: about 15 s per GiB here, which would fall into some timed phases and not
 * others. So each store is first opened, given one message and closed (close() cancels
 * the preparation), then reopened: the active segment has room and nothing is prepared
 * until it rolls, as in a restarted broker. A segment that rolls inside a timed phase
 * (a small --segment-mib) starts a zero-fill there, which is then part of the figure.
 * settleBackgroundWrites guards against any background write still going.
 */
async function prepareStores({ s, dir, body, out }: Run): Promise<Stores> {
  say("\n[0] Opening and warming up the stores");
  const open = async (name: string, flushDiskType: "ASYNC_FLUSH" | "SYNC_FLUSH") => {
    const root = join(dir, name);
    const patch = { flushDiskType, mappedFileSizeCommitLog: s.segmentBytes };
    const first = makeStore(root, patch);
    await first.open();
    await first.putMessage(testMessage("Warmup", 0, body));
    await first.close();
    const store = makeStore(root, patch);
    await store.open();
    const total = flushDiskType === "ASYNC_FLUSH" ? s.warmupCount : Math.round(s.warmupCount / 3);
    const label = `warmup ${flushDiskType}`;
    const run = { body, yieldEveryMs: s.yieldEveryMs, topic: "Warmup", total, label };
    await runAppenders(store, { ...run, appenders: 64 });
    return store;
  };
  const stores = {
    async: await open("async", "ASYNC_FLUSH"),
    sync: await open("sync", "SYNC_FLUSH"),
  };
  const settled = await Promise.all([
    settleBackgroundWrites(stores.async),
    settleBackgroundWrites(stores.sync),
  ]);
  out.settle_s = round(Math.max(...settled));
  say(`  background writes settled after ${Number(out.settle_s).toFixed(1)} s`);
  return stores;
}

async function asyncAppendPhase({ s, dir, body, out }: Run, store: MessageStore) {
  say("\n[1] ASYNC_FLUSH appends vs a raw writeSync loop of 1 KiB buffers");
  store.start();
  const base = { body, yieldEveryMs: s.yieldEveryMs };
  const many = s.asyncCounts.manyAppenders;
  const record = new Uint8Array(s.msgBytes).fill(7);
  const rawBefore = rawWriteLoop(dir, record, s.asyncCounts.many, "sparse");
  const one = await runAppenders(store, {
    ...base,
    topic: "BenchAsync1",
    appenders: 1,
    total: s.asyncCounts.one,
    label: "async, 1 appender",
  });
  const multi = await runAppenders(store, {
    ...base,
    topic: READ_TOPIC,
    appenders: many,
    total: s.asyncCounts.many,
    label: `async, ${many} appenders`,
  });
  await quiesce(store);
  const rawAfter = rawWriteLoop(dir, record, s.asyncCounts.many, "sparse");
  const rawZeroed = rawWriteLoop(dir, record, s.asyncCounts.many, "zeroed");
  const raw = meanRate(rawBefore, rawAfter);
  say(
    `  raw writeSync baseline ${count(rawBefore.perSecond)}/s before, ` +
      `${count(rawAfter.perSecond)}/s after; the mean is used`,
  );
  say(compareLine("store, 1 appender", one, "raw writeSync (sparse file)", raw));
  say(compareLine(`store, ${many} appenders`, multi, "raw writeSync (sparse file)", raw));
  say(compareLine(`store, ${many} appenders`, multi, "raw writeSync (zeroed file)", rawZeroed));
  Object.assign(out, {
    record_bytes: firstRecordBytes(store, READ_TOPIC),
    raw_write_msgs_per_s: round(raw.perSecond),
    raw_write_zeroed_msgs_per_s: round(rawZeroed.perSecond),
    async_1_msgs_per_s: round(one.perSecond),
    async_64_msgs_per_s: round(multi.perSecond),
    async_append_ratio_1: round(one.perSecond / raw.perSecond),
    async_append_ratio: round(multi.perSecond / raw.perSecond),
  });
}

function readPhase({ s, out }: Run, store: MessageStore) {
  say(
    `\n[3] ConsumeQueue reads: getMessage x32 over the ${count(s.asyncCounts.many)} ` +
      `messages of ${READ_TOPIC} (page cache warm)`,
  );
  const reads = readQueue(store, READ_TOPIC, s.msgBytes);
  const recordBytes = Number(out.record_bytes);
  const segment = storeCore(store).commitLog.segments[0].file.path;
  const rawCount = Math.min(reads.ops, Math.floor(s.segmentBytes / recordBytes));
  const rawReads = rawReadLoop(segment, recordBytes, rawCount);
  say(compareLine("getMessage x32", reads, "raw readSync, 1 per record", rawReads));
  Object.assign(out, {
    cq_read_msgs_per_s: round(reads.perSecond),
    raw_read_msgs_per_s: round(rawReads.perSecond),
    cq_read_ratio: round(reads.perSecond / rawReads.perSecond),
  });
}

async function syncAppendPhase({ s, dir, body, out }: Run, store: MessageStore) {
  say("\n[2] SYNC_FLUSH appends (group commit) vs a serial write+fdatasync loop");
  const record = new Uint8Array(s.msgBytes).fill(7);
  const serialBefore = serialFsyncLoop(dir, record, s.serialFsyncCount, "sparse");
  store.start();
  const rates = new Map<number, Rate>();
  for (const [appenders, total] of s.syncCounts) {
    const run = { body, yieldEveryMs: s.yieldEveryMs, appenders, total };
    const label = `sync, ${plural(appenders)}`;
    rates.set(
      appenders,
      await runAppenders(store, { ...run, topic: `BenchSync${appenders}`, label }),
    );
  }
  await store.close();
  const serialAfter = serialFsyncLoop(dir, record, s.serialFsyncCount, "sparse");
  const serialZeroed = serialFsyncLoop(dir, record, s.serialFsyncCount, "zeroed");
  const serial = meanRate(serialBefore, serialAfter);
  say(
    `  serial fdatasync baseline ${count(serialBefore.perSecond)}/s before, ` +
      `${count(serialAfter.perSecond)}/s after; the mean is used`,
  );
  for (const [appenders, rate] of rates) {
    say(
      compareLine(`store, ${plural(appenders)}`, rate, "serial fdatasync (sparse file)", serial),
    );
    out[`sync_${appenders}_msgs_per_s`] = round(rate.perSecond);
    out[`sync_${appenders}_vs_serial_fsync_ratio`] = round(rate.perSecond / serial.perSecond);
  }
  const top = Math.max(...rates.keys());
  say(
    compareLine(
      `store, ${plural(top)}`,
      rates.get(top)!,
      "serial fdatasync (zeroed file)",
      serialZeroed,
    ),
  );
  out.serial_fsync_ops_per_s = round(serial.perSecond);
  out.serial_fsync_zeroed_ops_per_s = round(serialZeroed.perSecond);
}

async function recoveryPhase({ s, dir, body, out }: Run) {
  say(`\n[4] Recovery of a ${s.recoveryBytes / MIB} MiB unflushed tail after an unclean stop`);
  const result = await crashAndRecover({
    root: join(dir, "recovery"),
    patch: { mappedFileSizeCommitLog: s.segmentBytes },
    fillBytes: s.recoveryBytes,
    body,
  });
  const { report, openSeconds } = result;
  const gib = report.scannedBytes / 2 ** 30;
  const scan = rawScan(result.segmentPaths, report.scannedBytes);
  const rawSPerGib = scan.seconds / (scan.ops / 2 ** 30);
  say(`  filled ${count(result.fill.ops)} msgs at ${count(result.fill.perSecond)} msg/s`);
  say(
    `  open() took ${openSeconds.toFixed(3)} s: scanned ${count(report.scannedBytes / MIB)} MiB, ` +
      `${count(report.records)} records, abnormal=${report.abnormal}`,
  );
  say(
    `  ${"recovery".padEnd(28)} ${(openSeconds / gib).toFixed(3).padStart(11)} s/GiB   vs ${
      "raw read 1 MiB blocks + crc32".padEnd(30)
    } ${rawSPerGib.toFixed(3).padStart(11)} s/GiB   ratio ${ratio(openSeconds / gib / rawSPerGib)}`,
  );
  Object.assign(out, {
    recovery_s: round(openSeconds),
    recovery_scanned_bytes: report.scannedBytes,
    recovery_records: report.records,
    recovery_s_per_gib: round(openSeconds / gib),
    raw_scan_s_per_gib: round(rawSPerGib),
    recovery_vs_raw_scan_ratio: round(openSeconds / gib / rawSPerGib),
  });
}

async function main() {
  const s = readSettings();
  fs.mkdirSync(s.baseDir, { recursive: true });
  const dir = fs.mkdtempSync(join(s.baseDir, "edgemq-commitlog-bench-"));
  const rt = runtimeInfo();
  const out: Figures = { runtime: rt.name, runtime_version: rt.version };
  const random = seededRandom(42);
  const body = Uint8Array.from({ length: s.msgBytes }, () => Math.floor(random() * 256));
  const started = performance.now();
  const run: Run = { s, dir, body, out };
  try {
    printSettings(s, dir);
    const stores = await prepareStores(run);
    await asyncAppendPhase(run, stores.async);
    readPhase(run, stores.async);
    await stores.async.close();
    await syncAppendPhase(run, stores.sync);
    await recoveryPhase(run);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  Object.assign(out, {
    quick: s.quick,
    msg_bytes: s.msgBytes,
    segment_bytes: s.segmentBytes,
    total_s: round((performance.now() - started) / 1000),
  });
  say(`\nSummary (targets: async_append_ratio >= 0.5, sync_256_vs_serial_fsync_ratio >= 30)`);
  for (
    const key of [
      "async_append_ratio",
      "sync_256_vs_serial_fsync_ratio",
      "cq_read_msgs_per_s",
      "recovery_s_per_gib",
    ]
  ) {
    say(`  ${key.padEnd(32)} ${out[key]}`);
  }
  say(`  total ${Number(out.total_s).toFixed(1)} s; removed ${dir}`);
  if (s.json) say(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
