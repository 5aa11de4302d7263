// Settings of the message store (storage/config.ts StoreConfig), by RocketMQ's names. The
// defaults here are the broker's; storage/config.ts keeps the same ones for the store on
// its own (tests, benches), and config_test.ts checks that the two agree.
import { boolSetting, choiceSetting, intSetting, textSetting } from "../protocol/setting.ts";
import { MAX_MESSAGE_SIZE } from "../protocol/limits.ts";

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

export const STORE_SETTINGS = [
  textSetting("store.storePathRootDir", "MQ_STORE_DIR", {
    default: "",
    defaultText: "<dataDir>/store",
    doc: "Store root: commitlog/, consumequeue/, index/, checkpoint, abort.",
    rocketmq: "storePathRootDir",
  }),
  choiceSetting("store.flushDiskType", "MQ_FLUSH_DISK_TYPE", ["SYNC_FLUSH", "ASYNC_FLUSH"], {
    default: "ASYNC_FLUSH",
    doc:
      "SYNC_FLUSH: acknowledge after fdatasync (group commit). ASYNC_FLUSH: acknowledge after write; sync every flushIntervalCommitLog.",
    rocketmq: "flushDiskType",
  }),
  intSetting("store.mappedFileSizeCommitLog", "MQ_SEGMENT_BYTES", {
    unit: "bytes",
    default: GIB,
    defaultText: "1073741824 (1 GiB)",
    min: 4096,
    doc: "CommitLog segment size.",
    rocketmq: "mappedFileSizeCommitLog",
  }),
  MAX_MESSAGE_SIZE,
  intSetting("store.recordOverheadBytesMax", "MQ_RECORD_OVERHEAD_BYTES_MAX", {
    unit: "bytes",
    default: 65_536,
    min: 1024,
    doc:
      "Bytes a CommitLog record may hold besides its body (header, topic, properties): a length above maxMessageSize plus this is damage, not a record.",
  }),
  intSetting("store.flushIntervalCommitLog", "MQ_FLUSH_INTERVAL_MS", {
    unit: "ms",
    default: 500,
    min: 1,
    doc: "ASYNC_FLUSH: time between background fdatasyncs.",
    rocketmq: "flushIntervalCommitLog",
  }),
  intSetting("store.syncFlushTimeout", "MQ_SYNC_FLUSH_TIMEOUT_MS", {
    unit: "ms",
    default: 5000,
    min: 1,
    doc: "SYNC_FLUSH: an append whose fdatasync has not finished by then fails (flush-timeout).",
    rocketmq: "syncFlushTimeout",
  }),
  intSetting("store.writeBatchBytesMax", "MQ_WRITE_BATCH_BYTES_MAX", {
    unit: "bytes",
    default: MIB,
    defaultText: "1048576 (1 MiB)",
    min: 1,
    doc: "Bytes gathered before a write is issued without waiting for the end of the tick.",
  }),
  intSetting("store.commitLogTailCacheBytes", "MQ_COMMIT_LOG_TAIL_CACHE_BYTES", {
    unit: "bytes",
    default: 16 * MIB,
    defaultText: "16777216 (16 MiB)",
    doc:
      "Newest CommitLog bytes kept in memory so reads at the tail need no syscall (RocketMQ has the page cache); 0 turns it off.",
  }),
  boolSetting("store.segmentZeroFill", "MQ_SEGMENT_ZERO_FILL", {
    default: undefined,
    defaultText: "true under SYNC_FLUSH, false under ASYNC_FLUSH",
    doc: "Zero-fill new segments ahead of use: a faster fdatasync, but every byte written twice.",
  }),
  intSetting("store.mappedFileSizeConsumeQueueUnits", "MQ_CQ_FILE_UNITS", {
    unit: "count",
    default: 300_000,
    min: 1,
    doc: "ConsumeQueue units (20 bytes each) per file.",
    rocketmq: "mappedFileSizeConsumeQueue / CQ_STORE_UNIT_SIZE",
  }),
  intSetting("store.flushIntervalConsumeQueue", "MQ_CHECKPOINT_INTERVAL_MS", {
    unit: "ms",
    default: 1000,
    min: 1,
    doc: "Time between checkpoints (ConsumeQueue and index flush, then the checkpoint file).",
    rocketmq: "flushIntervalConsumeQueue",
  }),
  intSetting("store.flushConsumeQueueLeastPages", "MQ_CQ_FLUSH_LEAST_PAGES", {
    unit: "count",
    default: 2,
    min: 0,
    doc:
      "A checkpoint syncs a ConsumeQueue once it holds this many 4 KiB pages of new units (or its oldest unsynced unit is store.flushConsumeQueueThoroughInterval old); 0 syncs every queue at every checkpoint. Keeps a checkpoint's fdatasync calls in step with the data written when traffic is spread over thousands of queues; messages stay as durable as the CommitLog flush makes them (a crash re-dispatches the rest).",
    rocketmq: "flushConsumeQueueLeastPages",
  }),
  intSetting("store.flushConsumeQueueThoroughInterval", "MQ_CQ_FLUSH_THOROUGH_INTERVAL_MS", {
    unit: "ms",
    default: 10_000,
    min: 0,
    doc:
      "The longest a ConsumeQueue's new units wait for their fdatasync: the most CommitLog time a crash recovery re-dispatches (RocketMQ's default is 60,000). 0 syncs every queue at every checkpoint.",
    rocketmq: "flushConsumeQueueThoroughInterval",
  }),
  intSetting("store.consumeQueueFsSyncMinQueues", "MQ_CQ_FS_SYNC_MIN_QUEUES", {
    unit: "count",
    default: 64,
    min: 0,
    doc:
      "A stop with at least this many ConsumeQueues to sync (a checkpoint still running at the stop included) makes them durable with one sync of the whole filesystem (Linux syncfs) instead of one fdatasync each, where the platform offers it (Bun, whose small I/O thread pool took 1–8 s for the 8,000 fdatasyncs of 1,000 topics); 0 always syncs file by file. Checkpoints while serving stay file by file. The data folder's filesystem is synced as a whole, so other writers on it add to that sync.",
  }),
  intSetting("store.maxHashSlotNum", "MQ_INDEX_HASH_SLOTS", {
    unit: "count",
    default: 5_000_000,
    min: 1,
    doc: "Hash slots per IndexFile.",
    rocketmq: "maxHashSlotNum",
  }),
  intSetting("store.maxIndexNum", "MQ_INDEX_ENTRIES", {
    unit: "count",
    default: 20_000_000,
    min: 1,
    doc: "Entries per IndexFile.",
    rocketmq: "maxIndexNum",
  }),
  boolSetting("store.messageIndexEnable", "MQ_MESSAGE_INDEX", {
    default: true,
    doc: "Build the key and message-id index at dispatch.",
    rocketmq: "messageIndexEnable",
  }),
  intSetting("store.maxFilterMessageSize", "MQ_FILTER_SCAN_BYTES", {
    unit: "bytes",
    default: 16_000,
    min: 20,
    doc:
      "A tag-filtered read scans at least this many bytes of ConsumeQueue units (or maxMsgNums x 20, if more).",
    rocketmq: "maxFilterMessageSize",
  }),
  intSetting("store.fileReservedTime", "MQ_FILE_RESERVED_HOURS", {
    unit: "hours",
    default: 72,
    min: 1,
    doc: "A CommitLog segment is kept this long after its last write.",
    rocketmq: "fileReservedTime",
  }),
  textSetting("store.deleteWhen", "MQ_DELETE_WHEN", {
    default: "04",
    doc: "Hours of the day (local time, ';'-separated) at which expired files are deleted.",
    rocketmq: "deleteWhen",
  }),
  intSetting("store.cleanResourceInterval", "MQ_RETENTION_CHECK_MS", {
    unit: "ms",
    default: 10_000,
    min: 1,
    doc: "Time between retention checks (is it the hour, is the disk full, what expired).",
    rocketmq: "cleanResourceInterval",
  }),
  intSetting("store.diskMaxUsedSpaceRatio", "MQ_DISK_MAX_USED_RATIO", {
    unit: "percent",
    default: 75,
    max: 100,
    doc: "Above this disk use, expired files are deleted at any hour.",
    rocketmq: "diskMaxUsedSpaceRatio",
  }),
  intSetting("store.diskSpaceCleanForciblyRatio", "MQ_DISK_CLEAN_FORCIBLY_RATIO", {
    unit: "percent",
    default: 85,
    max: 100,
    doc: "Above this disk use, the oldest files go regardless of age.",
    rocketmq: "diskSpaceCleanForciblyRatio",
  }),
  intSetting("store.diskSpaceWarningLevelRatio", "MQ_DISK_WARNING_RATIO", {
    unit: "percent",
    default: 90,
    max: 100,
    doc: "Above this disk use, puts are refused (disk-full).",
    rocketmq: "diskSpaceWarningLevelRatio",
  }),
  intSetting("store.noSpaceRetryMs", "MQ_NO_SPACE_RETRY_MS", {
    unit: "ms",
    default: 1000,
    min: 1,
    doc:
      "After a write failed for want of space (ENOSPC), time between checks whether writes can resume.",
  }),
  intSetting("store.noSpaceResumeBytes", "MQ_NO_SPACE_RESUME_BYTES", {
    unit: "bytes",
    default: 16 * MIB,
    defaultText: "16777216 (16 MiB)",
    min: 4096,
    doc:
      "After a write failed for want of space, writes resume once this many bytes are free and a write of as many zeros at the CommitLog's end succeeds. Preallocation also leaves this much free besides the diskSpaceWarningLevelRatio reserve.",
  }),
  intSetting("store.deleteFileBatchMax", "MQ_DELETE_FILE_BATCH_MAX", {
    unit: "count",
    default: 10,
    min: 1,
    doc: "Segments deleted per retention run, at most.",
    rocketmq: "deleteFileBatchMax",
  }),
  textSetting("store.messageDelayLevel", "MQ_DELAY_LEVELS", {
    default: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
    doc: "Delay levels: level N waits the Nth duration.",
    rocketmq: "messageDelayLevel",
  }),
  boolSetting("store.refuseCorruptionBelowCheckpoint", "MQ_REFUSE_CORRUPTION_BELOW_CHECKPOINT", {
    default: true,
    doc:
      "Refuse to start when recovery finds damage below the last checkpointed flush point, instead of truncating acknowledged data.",
  }),
  intSetting("store.recoveryProgressIntervalMs", "MQ_RECOVERY_PROGRESS_INTERVAL_MS", {
    unit: "ms",
    default: 5000,
    min: 100,
    doc:
      "A long recovery logs its progress (bytes scanned of at most how many, ETA) at least this often; /readyz shows it meanwhile.",
  }),
] as const;
