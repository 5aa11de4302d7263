// The parts of a message store and the state its modules share, built in one place.
// MessageStore (message_store.ts) is the API over them; put, read, replica apply and
// truncation, recovery and retention each take the parts they use.
import type { FilePort } from "./file_port.ts";
import { joinPath } from "./file_port.ts";
import { diskWarningRatio, recordBytesMax, type StoreConfig, zeroFillSegments } from "./config.ts";
import { CommitLog } from "./commit_log/commit_log.ts";
import { GroupCommit } from "./commit_log/group_commit.ts";
import { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import { IndexService } from "./index/index_service.ts";
import { parseDelayLevels } from "./dispatch_request.ts";
import { WriteGate } from "./write_gate.ts";
import { dropUnwritten } from "./no_space.ts";
import { Dispatcher } from "./dispatcher.ts";
import { PutSequencer } from "./put_sequencer.ts";
import { CheckpointWriter } from "./checkpoint_writer.ts";
import type { StoreLog } from "./store_types.ts";

export interface StoreCore {
  readonly files: FilePort;
  readonly config: StoreConfig;
  readonly root: string;
  readonly log: StoreLog;
  readonly nowMs: () => number;
  readonly commitLog: CommitLog;
  readonly groupCommit: GroupCommit;
  readonly consumeQueues: ConsumeQueueStore;
  readonly index: IndexService;
  /** messageDelayLevel in ms: level N delays by delayLevelsMs[N - 1]. */
  readonly delayLevelsMs: readonly number[];
  /** Largest whole record: maxMessageSize plus header, topic and properties. */
  readonly recordBytesMax: number;
  readonly gate: WriteGate;
  readonly dispatcher: Dispatcher;
  readonly sequencer: PutSequencer;
  readonly checkpoints: CheckpointWriter;
}

export interface StoreCoreOptions {
  files: FilePort;
  config: StoreConfig;
  nowMs: () => number;
  log: StoreLog;
}

export function createStoreCore({ files, config, nowMs, log }: StoreCoreOptions): StoreCore {
  const root = config.storePathRootDir;
  const commitLog = new CommitLog({
    files,
    dir: joinPath(root, "commitlog"),
    segmentBytes: config.mappedFileSizeCommitLog,
    writeBatchBytesMax: config.writeBatchBytesMax,
    zeroFill: zeroFillSegments(config),
    tailCacheBytes: config.commitLogTailCacheBytes,
    prealloc: {
      // The filled segment must leave the retention reserve (above it, puts are refused)
      // and noSpaceResumeBytes free.
      reserveBytes: (totalBytes) =>
        totalBytes * (100 - diskWarningRatio(config)) / 100 + config.noSpaceResumeBytes,
      retryMs: config.noSpaceRetryMs,
    },
  });
  const groupCommit = new GroupCommit(commitLog, {
    syncFlushTimeoutMs: config.syncFlushTimeout,
  });
  const consumeQueues = new ConsumeQueueStore(
    files,
    root,
    config.mappedFileSizeConsumeQueueUnits,
    config.consumeQueueFsSyncMinQueues,
  );
  const index = new IndexService({
    files,
    storePathRootDir: root,
    hashSlotNum: config.maxHashSlotNum,
    indexNum: config.maxIndexNum,
    nowMs,
  });
  const gate = new WriteGate(commitLog, groupCommit, {
    diskSpaceWarningLevelRatio: config.diskSpaceWarningLevelRatio,
    log,
    // Called only once the store is open, long after dispatcher and sequencer exist.
    onNoSpace: (): Promise<void> =>
      dropUnwritten({ files, config, commitLog, groupCommit, dispatcher, sequencer }),
  });
  const dispatcher = new Dispatcher(
    { commitLog, consumeQueues, index, messageIndexEnable: config.messageIndexEnable },
    gate,
  );
  const sequencer = new PutSequencer(consumeQueues);
  const checkpoints = new CheckpointWriter({
    groupCommit,
    consumeQueues,
    index,
    dispatcher,
    sequencer,
  });
  return {
    files,
    config,
    root,
    log,
    nowMs,
    commitLog,
    groupCommit,
    consumeQueues,
    index,
    delayLevelsMs: parseDelayLevels(config.messageDelayLevel),
    recordBytesMax: recordBytesMax(config),
    gate,
    dispatcher,
    sequencer,
    checkpoints,
  };
}
