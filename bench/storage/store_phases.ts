// The timed MessageStore workloads of the CommitLog bench: concurrent appenders, a
// ConsumeQueue read-back, and a crash-then-recover. The real disk (NodeFilePort) and the
// real store; nothing is mocked.
import * as fs from "node:fs";
import { join } from "node:path";
import { defaultStoreConfig, type StoreConfig } from "../../storage/config.ts";
import { MessageStore, type StoreLog } from "../../storage/message_store.ts";
import { NodeFilePort } from "../../storage/node_fs_port.ts";
import type { RecoveryReport } from "../../storage/recovery.ts";
import { storeCore, testMessage } from "../../storage/testing.ts";
import { Progress, type Rate, rateOf, say, sleep, Yielder } from "../support.ts";

/** Store log lines (recovery progress among them) go to the bench's output. */
const printLog: StoreLog = (level, msg, fields) =>
  say(`    store ${level}: ${msg}${fields ? " " + JSON.stringify(fields) : ""}`);

export function makeStore(root: string, patch: Partial<StoreConfig>): MessageStore {
  return new MessageStore({
    files: new NodeFilePort(),
    config: { ...defaultStoreConfig(root), ...patch },
    nowMs: () => Date.now(),
    log: printLog,
  });
}

export interface AppendRun {
  topic: string;
  appenders: number;
  total: number;
  body: Uint8Array;
  /** Hand the event loop a turn this often (Infinity: never). */
  yieldEveryMs: number;
  label: string;
}

/**
 * `appenders` loops, each awaiting its own putMessage, until `total` messages are stored
 * on queue 0 of `topic`. One put per await, as a producer awaiting each ack would do.
 */
export async function runAppenders(store: MessageStore, run: AppendRun): Promise<Rate> {
  let claimed = 0;
  const progress = new Progress(run.label, run.total);
  const yielder = new Yielder(run.yieldEveryMs);
  const appender = async () => {
    while (claimed < run.total) {
      claimed++;
      await store.putMessage(testMessage(run.topic, 0, run.body));
      progress.tick();
      const turn = yielder.due();
      if (turn) await turn;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: run.appenders }, appender));
  return rateOf(run.total, start);
}

/**
 * Waits until background writes into the CommitLog folder are done: no `*.prealloc` file
 * (the next segment being zero-filled, storage/commit_log/preallocate.ts) and allocated
 * bytes unchanged for 300 ms. The zero-fill of the next segment starts when a segment is
 * first written and costs one segment of writes and an fdatasync; letting it finish here
 * keeps it out of one timed phase and not the others. Returns the seconds waited.
 */
export async function settleBackgroundWrites(
  store: MessageStore,
  timeoutMs = 120_000,
): Promise<number> {
  const dir = storeCore(store).commitLog.dir;
  const allocated = () => {
    let blocks = 0, preparing = false;
    for (const name of fs.readdirSync(dir)) {
      if (name.endsWith(".prealloc")) preparing = true;
      blocks += fs.statSync(join(dir, name)).blocks;
    }
    return { blocks, preparing };
  };
  const start = performance.now();
  let last = allocated(), stableSince = start;
  while (performance.now() - start < timeoutMs) {
    await sleep(50);
    const now = allocated();
    if (now.preparing || now.blocks !== last.blocks) stableSince = performance.now();
    else if (performance.now() - stableSince >= 300) return (performance.now() - start) / 1000;
    last = now;
  }
  say(`    background writes in ${dir} still going after ${timeoutMs} ms; going on`);
  return (performance.now() - start) / 1000;
}

/**
 * Lets the store's in-flight background I/O (the async flush of what a phase just wrote)
 * finish before a baseline runs, so the baseline does not share the disk with it.
 */
export async function quiesce(store: MessageStore): Promise<void> {
  await storeCore(store).groupCommit.idle();
  await sleep(200);
}

/** Reads queue 0 of `topic` from its start in pulls of 32, checking order and sizes. */
export function readQueue(store: MessageStore, topic: string, bodyBytes: number): Rate {
  const expected = store.getMaxOffsetInQueue(topic, 0) - store.getMinOffsetInQueue(topic, 0);
  const progress = new Progress("getMessage x32", expected);
  let offset = store.getMinOffsetInQueue(topic, 0), got = 0;
  const start = performance.now();
  for (;;) {
    const result = store.getMessage(topic, 0, offset, { maxMsgNums: 32, maxBytes: 1 << 20 });
    if (result.status !== "FOUND") break;
    for (const m of result.messages) {
      if (m.queueOffset !== offset || m.record.body.length !== bodyBytes) {
        throw new Error(`Cannot trust the read-back: unexpected message at queue offset ${offset}`);
      }
      offset++;
    }
    got += result.messages.length;
    progress.tick(result.messages.length);
  }
  const rate = rateOf(got, start);
  if (got !== expected) {
    throw new Error(`Cannot trust the read-back: read ${got} of ${expected} messages`);
  }
  return rate;
}

export interface RecoveryRun {
  root: string;
  patch: Partial<StoreConfig>;
  fillBytes: number;
  body: Uint8Array;
}

export interface RecoveryResult {
  fill: Rate;
  openSeconds: number;
  report: RecoveryReport;
  segmentPaths: string[];
}

/**
 * Fills a fresh ASYNC_FLUSH store with `fillBytes` of records and abandons it without
 * close(), then times open() of a new store on the same folder.
 *
 * The writing process is not really killed: its bytes stay in the page cache, unsynced,
 * which is exactly what a kill -9 leaves behind (the kernel keeps dirty pages of a dead
 * process and writes them back later). A power loss would lose them instead; the
 * simulated-disk tests cover that. The store is never start()ed, so no flush or
 * checkpoint timer runs: the only checkpoint is the one open() wrote before any data, and
 * recovery has to scan, CRC-check and re-dispatch the whole tail, then fdatasync it.
 */
export async function crashAndRecover(run: RecoveryRun): Promise<RecoveryResult> {
  const crashed = makeStore(run.root, { ...run.patch, flushDiskType: "ASYNC_FLUSH" });
  await crashed.open();
  const recordBytes = (await crashed.putMessage(testMessage("BenchRecover", 0, run.body))).size;
  const total = Math.max(1, Math.ceil(run.fillBytes / recordBytes) - 1);
  const fill = await runAppenders(crashed, {
    topic: "BenchRecover",
    appenders: 64,
    total,
    body: run.body,
    yieldEveryMs: Infinity,
    label: "fill (no flush, no checkpoint)",
  });
  // What a dying process loses besides its memory: its file descriptors. Closing the
  // CommitLog's and ConsumeQueues' handles writes nothing new (every put has resolved, so
  // every byte is already in the page cache) and syncs nothing; it stops the background
  // zero-fill of the next segment, which would otherwise keep writing during the timed open.
  await storeCore(crashed).commitLog.close();
  storeCore(crashed).consumeQueues.close();

  const recovered = makeStore(run.root, { ...run.patch, flushDiskType: "ASYNC_FLUSH" });
  const start = performance.now();
  const report = await recovered.open();
  const openSeconds = (performance.now() - start) / 1000;
  const segmentPaths = storeCore(recovered).commitLog.segments.map((s) => s.file.path);
  await recovered.close();
  if (report.records !== total + 1) {
    throw new Error(`Cannot trust recovery: it found ${report.records} of ${total + 1} records`);
  }
  return { fill, openSeconds, report, segmentPaths };
}
