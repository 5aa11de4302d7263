// Every limit of the store: name (RocketMQ's where one exists), unit, default, reason.
// The runtime reads overrides from its config file, environment and flags.

export type FlushDiskType = "SYNC_FLUSH" | "ASYNC_FLUSH";

export interface StoreConfig {
  /** Root folder: commitlog/, consumequeue/, index/, checkpoint, abort. */
  storePathRootDir: string;
  /** CommitLog segment size in bytes (mappedFileSizeCommitLog). 1 GiB. */
  mappedFileSizeCommitLog: number;
  /** Write real zeros into a new segment in the background before it is used: fdatasync on
   * pre-written blocks is 1.3-1.6x faster (reference/performance.md). That speeds only the
   * acknowledgement of SYNC_FLUSH; under ASYNC_FLUSH the fsync is off the ack path and the
   * fill writes every byte twice (single produces -15-30% while it runs). Unset: on under
   * SYNC_FLUSH, off under ASYNC_FLUSH (zeroFillSegments). */
  segmentZeroFill?: boolean;
  /** Largest message body in bytes (maxMessageSize). 4 MiB. */
  maxMessageSize: number;
  /** Bytes a CommitLog record may hold besides its body (header, topic, properties): a
   * length above maxMessageSize plus this is damage, not a record. 64 KiB. */
  recordOverheadBytesMax: number;
  flushDiskType: FlushDiskType;
  /** ASYNC_FLUSH: ms between background fdatasyncs (flushIntervalCommitLog). 500. */
  flushIntervalCommitLog: number;
  /** SYNC_FLUSH: an append whose fdatasync has not finished after this many ms fails with
   * FLUSH_DISK_TIMEOUT (syncFlushTimeout). 5000. */
  syncFlushTimeout: number;
  /** Bytes gathered before a write is issued without waiting for the end of the tick. 1 MiB. */
  writeBatchBytesMax: number;
  /** The newest CommitLog bytes kept in memory, so that reads at the tail (pulls, pushes,
   * replicas keeping up) need no syscall; RocketMQ gets this from its mmap and the page
   * cache. 0 turns it off. 16 MiB (under a second of a busy broker's appends). */
  commitLogTailCacheBytes: number;
  /** ConsumeQueue units per file (300,000 x 20 bytes = 6,000,000 bytes). */
  mappedFileSizeConsumeQueueUnits: number;
  /** ms between checkpoints (ConsumeQueue/index flush, then the checkpoint file). 1000. */
  flushIntervalConsumeQueue: number;
  /** A periodic checkpoint syncs a ConsumeQueue once it has this many 4 KiB pages of new
   * units (or once flushConsumeQueueThoroughInterval has passed); 0 syncs every queue at
   * every checkpoint. 2, as RocketMQ. */
  flushConsumeQueueLeastPages: number;
  /** The longest a ConsumeQueue's new units wait for their sync (ms), so the longest
   * stretch of CommitLog a crash recovery re-dispatches. 10,000 (RocketMQ: 60,000). */
  flushConsumeQueueThoroughInterval: number;
  /** A stop with this many ConsumeQueues to sync, or more, makes them durable with one
   * sync of the filesystem where the platform offers it (FsSync: Bun); 0 never. 64. */
  consumeQueueFsSyncMinQueues: number;
  /** Index hash slots per IndexFile (maxHashSlotNum). 5,000,000. */
  maxHashSlotNum: number;
  /** Index entries per IndexFile (maxIndexNum). 20,000,000. */
  maxIndexNum: number;
  /** Build the key/id index at dispatch (messageIndexEnable). */
  messageIndexEnable: boolean;
  /** A tag-filtered read scans at least this many bytes of ConsumeQueue units, or
   * maxMsgNums x 20 if more (maxFilterMessageSize). 16,000. */
  maxFilterMessageSize: number;
  /** Hours a CommitLog segment is kept after its last write (fileReservedTime). 72. */
  fileReservedTime: number;
  /** Hours of the day (local time, ";"-separated) at which expired files are deleted. "04". */
  deleteWhen: string;
  /** ms between retention checks (cleanResourceInterval). 10,000. */
  cleanResourceInterval: number;
  /** Disk use ratio (%) above which expired files are deleted at any hour. 75. */
  diskMaxUsedSpaceRatio: number;
  /** Disk use ratio (%) above which the oldest files go regardless of age. 85. */
  diskSpaceCleanForciblyRatio: number;
  /** Disk use ratio (%) above which puts are refused (DISK_FULL). 90. */
  diskSpaceWarningLevelRatio: number;
  /** After a write failed for want of space (ENOSPC), ms between checks whether writes can
   * resume. 1000. */
  noSpaceRetryMs: number;
  /** After a write failed for want of space, writes resume once this many bytes are free
   * and a write of as many zeros at the CommitLog's end succeeded (they stay there, room
   * for the next records). Also the room preallocation leaves free besides the
   * diskSpaceWarningLevelRatio reserve. 16 MiB. */
  noSpaceResumeBytes: number;
  /** At most this many segments deleted per retention run (deleteFileBatchMax). 10. */
  deleteFileBatchMax: number;
  /** Delay levels (messageDelayLevel): level N waits the Nth duration. 18 levels. */
  messageDelayLevel: string;
  /** Refuse to start when recovery finds damage below the last checkpointed flush point,
   * instead of truncating acknowledged data. true. */
  refuseCorruptionBelowCheckpoint: boolean;
  /** A long recovery logs (and reports) its progress at least this often. 5000. */
  recoveryProgressIntervalMs: number;
}

/** Whether new CommitLog segments are zero-filled ahead of use (see segmentZeroFill). */
export function zeroFillSegments(config: StoreConfig): boolean {
  return config.segmentZeroFill ?? config.flushDiskType === "SYNC_FLUSH";
}

/** Disk use (%) above which puts are refused: diskSpaceWarningLevelRatio within RocketMQ's
 * bounds [35, 90]. */
export function diskWarningRatio(config: StoreConfig): number {
  return Math.min(90, Math.max(35, config.diskSpaceWarningLevelRatio));
}

/** Largest CommitLog record: a longer length field is damage, not a record. */
export function recordBytesMax(config: StoreConfig): number {
  return config.maxMessageSize + config.recordOverheadBytesMax;
}

export const GIB = 1024 * 1024 * 1024;
export const MIB = 1024 * 1024;

export function defaultStoreConfig(storePathRootDir: string): StoreConfig {
  return {
    storePathRootDir,
    mappedFileSizeCommitLog: GIB,
    maxMessageSize: 4 * MIB,
    recordOverheadBytesMax: 64 * 1024,
    flushDiskType: "ASYNC_FLUSH",
    flushIntervalCommitLog: 500,
    syncFlushTimeout: 5000,
    writeBatchBytesMax: MIB,
    commitLogTailCacheBytes: 16 * MIB,
    mappedFileSizeConsumeQueueUnits: 300_000,
    flushIntervalConsumeQueue: 1000,
    flushConsumeQueueLeastPages: 2,
    flushConsumeQueueThoroughInterval: 10_000,
    consumeQueueFsSyncMinQueues: 64,
    maxHashSlotNum: 5_000_000,
    maxIndexNum: 20_000_000,
    messageIndexEnable: true,
    maxFilterMessageSize: 16_000,
    fileReservedTime: 72,
    deleteWhen: "04",
    cleanResourceInterval: 10_000,
    diskMaxUsedSpaceRatio: 75,
    diskSpaceCleanForciblyRatio: 85,
    diskSpaceWarningLevelRatio: 90,
    deleteFileBatchMax: 10,
    noSpaceRetryMs: 1000,
    noSpaceResumeBytes: 16 * MIB,
    refuseCorruptionBelowCheckpoint: true,
    recoveryProgressIntervalMs: 5000,
    messageDelayLevel: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
  };
}
