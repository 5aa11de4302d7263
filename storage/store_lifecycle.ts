// Opening and closing a store's files. Open: load the parts, recover (recovery.ts), mark
// the run unclean with the abort file, checkpoint. Close: write what is gathered, flush,
// dispatch, checkpoint, and remove the abort file only when all of that succeeded.
import { joinPath } from "./file_port.ts";
import { StoreCheckpoint } from "./checkpoint.ts";
import { recoverStore, type RecoveryProgress, type RecoveryReport } from "./recovery.ts";
import { readTruncateMarker, removeTruncateMarker } from "./ha/truncate_marker.ts";
import type { StoreCore } from "./store_core.ts";

export interface OpenStoreOptions {
  abortPath: string;
  /** Called after each CommitLog write reaches the kernel, with the new written end. */
  onWritten: (wroteOffset: number) => void;
  /** Told how far a recovery scan got, now and then (readiness). */
  onProgress?: (progress: RecoveryProgress) => void;
}

/** Opens the folder, recovers (printing progress on long scans) and marks the run unclean. */
export async function openStore(
  core: StoreCore,
  { abortPath, onWritten, onProgress }: OpenStoreOptions,
): Promise<RecoveryReport> {
  const { files, root, commitLog, groupCommit, dispatcher, config } = core;
  files.mkdirp(root);
  const abnormal = files.exists(abortPath);
  commitLog.load();
  core.consumeQueues.load();
  core.index.load();
  const checkpoint = new StoreCheckpoint(files, joinPath(root, "checkpoint"), root);
  core.checkpoints.file = checkpoint;
  const truncateTo = readTruncateMarker(files, root);
  const report = await recoverStore({
    store: core,
    checkpoint: checkpoint.read(),
    abnormal,
    log: core.log,
    dispatch: (req) => dispatcher.dispatchOne(req),
    truncateTo,
    nowMs: core.nowMs,
    onProgress,
  });
  // Queue offsets continue from what the recovered ConsumeQueues hold.
  core.sequencer.clear();
  dispatcher.resetTo(report.endOffset);
  groupCommit.reset(report.endOffset);
  core.sequencer.noteStoreTimestamp(report.lastStoreTimestamp);
  commitLog.onWritten((wrote) => {
    if (config.flushDiskType === "ASYNC_FLUSH") dispatcher.dispatchSafely(wrote);
    onWritten(wrote);
  });
  groupCommit.onFlushed((flushed) => {
    if (config.flushDiskType === "SYNC_FLUSH") dispatcher.dispatchSafely(flushed);
  });
  const abort = files.open(abortPath, { create: true });
  abort.close();
  await files.syncDir(root);
  core.gate.open = true;
  await core.checkpoints.run();
  // Only now is the cut durable everywhere (CommitLog, ConsumeQueues, index, checkpoint).
  if (truncateTo !== undefined) await removeTruncateMarker(files, root);
  return report;
}

/** Clean shutdown: write what is gathered, flush, checkpoint, remove the abort file. */
export async function closeStore(core: StoreCore, abortPath: string): Promise<void> {
  const { gate, groupCommit, dispatcher, checkpoints, files, root } = core;
  // A periodic checkpoint running now hands its remaining ConsumeQueues to one filesystem
  // sync where the platform has one (Bun: 8,000 fdatasyncs took seconds there).
  core.consumeQueues.hurry();
  await gate.drain();
  await groupCommit.idle();
  let clean = !gate.failed;
  if (clean) {
    try {
      dispatcher.dispatchUpTo(groupCommit.flushedOffset);
      await checkpoints.running?.catch(() => {});
      await checkpoints.run();
    } catch (err) {
      // A full disk may refuse the ConsumeQueue or checkpoint writes: the abort file stays,
      // and the next start recovers from the CommitLog.
      core.log("error", "closing without a checkpoint", { err: String(err) });
      clean = false;
    }
  }
  gate.open = false;
  await core.commitLog.close();
  core.consumeQueues.close();
  await core.index.close().catch(() => {});
  checkpoints.file?.close();
  if (clean && dispatcher.pending === 0) {
    files.remove(abortPath);
    await files.syncDir(root);
  }
}
