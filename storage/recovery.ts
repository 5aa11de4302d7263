// Recovery at open (reference/rocketmq.md §5, reliability.md §4.1).
//
// The checkpoint names `dispatchSafeOffset`: a record boundary below which the CommitLog
// was synced and the ConsumeQueues and index were made durable. Everything derived above
// it is dropped and rebuilt by scanning the CommitLog from there, record by record with
// CRC and self-offset checks, so the scan is proportional to the unflushed tail, not the
// whole log. The first bad record ends the log: its bytes (a torn write) are zeroed and
// never served. Damage *below* the last checkpointed flush point is not a torn tail but
// lost acknowledged data: the store refuses to start instead of truncating it silently.
//
// An unfinished replica truncation (storage/ha/truncate_marker.ts) ends the log at its
// offset whatever lies beyond: those records are whole and CRC-valid, but were dropped on
// purpose (a divergent tail), so the scan stops there and the cut is completed.
import { CorruptRecordError } from "./errors.ts";
import { readFully } from "./file_port.ts";
import { parseRecord } from "./message/record_decode.ts";
import { buildsConsumeQueue, type DispatchRequest, dispatchRequestOf } from "./dispatch_request.ts";
import type { CheckpointState } from "./checkpoint.ts";
import type { StoreConfig } from "./config.ts";
import type { CommitLog } from "./commit_log/commit_log.ts";
import type { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import type { IndexService } from "./index/index_service.ts";
import type { StoreLog } from "./store_types.ts";

const SCAN_BLOCK_BYTES = 1024 * 1024;
/** The scan hands the event loop a turn this often, so the HTTP port answers (/readyz)
 * while a long log is scanned. */
const YIELD_EVERY_MS = 25;
const ZERO_BLOCK_BYTES = 64 * 1024;

export interface RecoveryReport {
  abnormal: boolean;
  startOffset: number;
  endOffset: number;
  scannedBytes: number;
  records: number;
  /** Why the scan stopped, when it stopped at damage rather than at the end of data. */
  damage?: string;
  /** The offset of an unfinished truncation this recovery completed. */
  finishedTruncation?: number;
  lastStoreTimestamp: number;
}

/** The parts of the store recovery reads and repairs. */
export interface RecoveryParts {
  commitLog: CommitLog;
  consumeQueues: ConsumeQueueStore;
  index: IndexService;
  config: Pick<StoreConfig, "refuseCorruptionBelowCheckpoint" | "recoveryProgressIntervalMs">;
  delayLevelsMs: readonly number[];
  recordBytesMax: number;
}

export interface RecoverArgs {
  store: RecoveryParts;
  checkpoint: CheckpointState | undefined;
  abnormal: boolean;
  log: StoreLog;
  dispatch: (req: DispatchRequest) => void;
  /** The offset of an unfinished truncation (the marker's), if any. */
  truncateTo?: number;
  nowMs: () => number;
  /** Told how far the scan got, each time it hands the event loop a turn. */
  onProgress?: (progress: RecoveryProgress) => void;
}

/** Bytes scanned of at most totalBytes (the end of the last segment, an upper bound). */
export interface RecoveryProgress {
  scannedBytes: number;
  totalBytes: number;
  elapsedMs: number;
}

export async function recoverStore(args: RecoverArgs): Promise<RecoveryReport> {
  const { store, checkpoint, log } = args;
  const commitLog = store.commitLog;
  if (commitLog.segments.length === 0) {
    // No CommitLog: nothing derived can be trusted.
    for (const topic of store.consumeQueues.topics()) store.consumeQueues.destroyTopic(topic);
    await store.index.recoverAfterCrash(0);
    return {
      abnormal: args.abnormal,
      startOffset: 0,
      endOffset: commitLog.wroteOffset,
      scannedBytes: 0,
      records: 0,
      lastStoreTimestamp: 0,
    };
  }
  const min = commitLog.minOffset;
  const limit = args.truncateTo === undefined ? Infinity : Math.max(args.truncateTo, min);
  const start = Math.min(chooseStart(store, checkpoint, log), limit);
  for (const cq of store.consumeQueues.all()) cq.truncateFromPhysical(start, !args.abnormal);
  await store.index.recoverAfterCrash(start);

  const scan = await scanFrom(store, start, limit, args);
  if (
    scan.damage && checkpoint && scan.end < checkpoint.flushedOffset &&
    store.config.refuseCorruptionBelowCheckpoint
  ) {
    throw new CorruptRecordError(
      scan.end,
      `${scan.damage}, below the checkpointed flush point ${checkpoint.flushedOffset}: acknowledged data is damaged; refusing to truncate it (refuseCorruptionBelowCheckpoint)`,
    );
  }
  if (scan.damage) {
    log("warn", "recovery truncated a torn tail", { offset: scan.end, reason: scan.damage });
  }
  if (args.truncateTo === undefined) {
    await zeroTail(store, scan.end);
    commitLog.setEnd(scan.end);
  } else {
    await commitLog.truncateTo(scan.end);
  }
  for (const cq of store.consumeQueues.all()) cq.truncateFromPhysical(scan.end, !args.abnormal);
  // What recovery accepted must be durable before anyone is told it is (kill -9 leaves it
  // only in the page cache).
  for (const segment of commitLog.segmentsBetween(commitLog.minOffset, scan.end)) {
    await segment.file.datasync();
  }
  if (scan.logged) log("info", "recovery finished", { ...scan, start });
  return {
    abnormal: args.abnormal,
    startOffset: start,
    endOffset: scan.end,
    scannedBytes: scan.end - start,
    records: scan.records,
    damage: scan.damage,
    finishedTruncation: args.truncateTo,
    lastStoreTimestamp: Math.max(scan.lastStoreTimestamp, checkpoint?.physicMsgTimestamp ?? 0),
  };
}

function chooseStart(
  store: RecoveryParts,
  checkpoint: CheckpointState | undefined,
  log: StoreLog,
): number {
  const commitLog = store.commitLog;
  const min = commitLog.minOffset;
  const max = commitLog.segments.at(-1)!.endOffset;
  const wanted = checkpoint?.dispatchSafeOffset ?? min;
  if (wanted < min) return min;
  if (wanted > max) {
    log("warn", "checkpoint points past the CommitLog; scanning it all", { wanted, max });
    return min;
  }
  const segment = commitLog.findSegment(wanted);
  if (!segment) return wanted; // exactly the end of the last segment
  const head = readFully(segment.file, wanted - segment.startOffset, 8);
  const probe = parseRecord(head, 0, { checkCrc: false });
  if (probe.kind === "corrupt" && probe.reason !== "bad or truncated total size") {
    log("warn", "checkpoint offset is not a record boundary; scanning the whole CommitLog", {
      wanted,
    });
    return min;
  }
  return wanted;
}

interface ScanResult {
  end: number;
  records: number;
  damage?: string;
  lastStoreTimestamp: number;
  /** Whether progress was logged (a long scan): then its end is logged too. */
  logged: boolean;
}

async function scanFrom(
  store: RecoveryParts,
  start: number,
  limit: number,
  args: Pick<RecoverArgs, "dispatch" | "log" | "nowMs" | "onProgress">,
): Promise<ScanResult> {
  const { dispatch, log, nowMs, onProgress } = args;
  const commitLog = store.commitLog;
  const recordBytesMax = store.recordBytesMax;
  const began = nowMs();
  const lastSegment = commitLog.segments.at(-1);
  const total = Math.max(0, Math.min(limit, lastSegment?.endOffset ?? start) - start);
  const logEveryMs = store.config.recoveryProgressIntervalMs;
  let pos = start, records = 0, lastStoreTimestamp = 0, logged = false;
  let nextYield = began + YIELD_EVERY_MS, nextLog = began + logEveryMs;
  const stop = (damage?: string): ScanResult => ({
    end: pos,
    records,
    damage,
    lastStoreTimestamp,
    logged,
  });
  let block: Uint8Array = new Uint8Array(0), blockStart = 0;
  for (;;) {
    const segment = commitLog.findSegment(pos);
    if (!segment || pos >= limit) return stop();
    // Keep a block that holds at least the header at `pos`, and the whole record once its
    // size is known (records cross block ends).
    let at = pos - blockStart;
    if (at < 0 || block.length - at < 8) {
      block = readFully(
        segment.file,
        pos - segment.startOffset,
        Math.min(SCAN_BLOCK_BYTES, segment.endOffset - pos),
      );
      blockStart = pos;
      at = 0;
    }
    const size = new DataView(block.buffer, block.byteOffset + at).getInt32(0);
    if (size > block.length - at && size <= Math.min(recordBytesMax, segment.endOffset - pos)) {
      block = readFully(
        segment.file,
        pos - segment.startOffset,
        Math.max(size, Math.min(SCAN_BLOCK_BYTES, segment.endOffset - pos)),
      );
      blockStart = pos;
      at = 0;
    }
    const result = parseRecord(block, at, { checkCrc: true, expectedPhysicalOffset: pos });
    if (result.kind === "end") return stop();
    if (result.kind === "corrupt") return stop(result.reason);
    if (result.kind === "blank") {
      if (pos + result.size !== segment.endOffset) {
        return stop("BLANK does not reach the segment end");
      }
      pos = segment.endOffset;
      continue;
    }
    const record = result.record;
    if (buildsConsumeQueue(record.sysFlag)) {
      const cq = store.consumeQueues.find(record.topic, record.queueId);
      if (cq && cq.maxOffset !== cq.minOffset && record.queueOffset !== cq.maxOffset) {
        return stop(
          `queue offset ${record.queueOffset} breaks the sequence of ${record.topic}:${record.queueId} at ${cq.maxOffset}`,
        );
      }
    }
    dispatch(dispatchRequestOf(record, store.delayLevelsMs));
    records++;
    lastStoreTimestamp = record.storeTimestamp;
    pos += result.size;
    const now = nowMs();
    if (now < nextYield) continue;
    const progress = { scannedBytes: pos - start, totalBytes: total, elapsedMs: now - began };
    if (now >= nextLog) {
      const rate = progress.scannedBytes / Math.max(1, progress.elapsedMs);
      log("info", "recovery progress", {
        offset: pos,
        scannedMiB: Math.round(progress.scannedBytes / 1048576),
        atMostMiB: Math.round(total / 1048576),
        etaSeconds: Math.round((total - progress.scannedBytes) / rate / 1000),
      });
      logged = true;
      nextLog = now + logEveryMs;
    }
    onProgress?.(progress);
    await new Promise((resolve) => setTimeout(resolve, 0));
    nextYield = nowMs() + YIELD_EVERY_MS;
  }
}

/** Zeroes bytes after `end` in its segment up to the first all-zero block, then syncs. */
async function zeroTail(store: RecoveryParts, end: number) {
  const segment = store.commitLog.findSegment(end);
  if (!segment) return;
  let pos = end - segment.startOffset;
  let wrote = false;
  while (pos < segment.sizeBytes) {
    const n = Math.min(ZERO_BLOCK_BYTES, segment.sizeBytes - pos);
    const bytes = readFully(segment.file, pos, n);
    if (bytes.every((b) => b === 0)) break;
    segment.file.writeAt(new Uint8Array(n), pos);
    wrote = true;
    pos += n;
  }
  if (wrote) await segment.file.datasync();
}
