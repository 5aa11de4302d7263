// The message store: CommitLog + flush + ConsumeQueues + index + checkpoint, behind one
// put/get surface (RocketMQ's DefaultMessageStore, minus the network). It knows no HTTP,
// lease or wall clock beyond the `nowMs` it is handed. The parts are built in
// store_core.ts; reads are message_reader.ts, replica apply and truncation storage/ha/.
import type { FilePort } from "./file_port.ts";
import { joinPath } from "./file_port.ts";
import type { StoreConfig } from "./config.ts";
import { CQ_UNIT_BYTES, type CqUnit } from "./consume_queue/consume_queue.ts";
import type { CommitLogChunk } from "./commit_log/replica_io.ts";
import { type MessageInput, type MessageRecord, prepareRecord } from "./message/record.ts";
import { createStoreCore, type StoreCore } from "./store_core.ts";
import { closeStore, openStore } from "./store_lifecycle.ts";
import { putPrepared } from "./put_message.ts";
import { MessageReader } from "./message_reader.ts";
import type { RecoveryProgress, RecoveryReport } from "./recovery.ts";
import type { DurationCounts } from "./duration_histogram.ts";
import { Retention } from "./retention.ts";
import { resumeIfSpace } from "./no_space.ts";
import { appendReplicated, readCommitLogBytes } from "./ha/replica_apply.ts";
import { truncateCommitLogTo } from "./ha/replica_truncate.ts";
import type {
  ArrivalListener,
  GetMessageResult,
  MessageFilter,
  PutResult,
  ReplicatedAppend,
  StoreLog,
  StoreStats,
} from "./store_types.ts";

export type {
  ArrivalListener,
  Durability,
  GetMessageResult,
  GetMessageStatus,
  MessageFilter,
  PutResult,
  ReplicatedAppend,
  StoredMessage,
  StoreLog,
  StoreStats,
} from "./store_types.ts";

/** The key of the test-only accessor to a store's parts (storage/testing.ts). */
export const STORE_CORE = Symbol("MessageStore core, for tests only");

export interface MessageStoreOptions {
  files: FilePort;
  config: StoreConfig;
  nowMs: () => number;
  log?: StoreLog;
  /** Percent of the disk in use (0-100); retention deletes early when it is high. */
  diskUsedRatio?: () => number;
}

export class MessageStore {
  readonly #core: StoreCore;
  readonly #reader: MessageReader;
  readonly #retention: Retention;
  #timers: ReturnType<typeof setInterval>[] = [];
  #writtenListeners = new Set<(wroteOffset: number) => void>();
  #recovery: RecoveryReport | undefined;
  #resuming: Promise<boolean> | undefined;

  constructor(options: MessageStoreOptions) {
    const log = options.log ?? (() => {});
    const core = this.#core = createStoreCore({ ...options, log });
    this.#reader = new MessageReader(core);
    this.#retention = new Retention(core, {
      nowMs: options.nowMs,
      diskUsedRatio: options.diskUsedRatio ?? (() => 0),
      log,
    });
  }

  /** What the last open() recovered; undefined before it. */
  get recovery(): RecoveryReport | undefined {
    return this.#recovery;
  }
  /** messageDelayLevel in ms: level N delays by delayLevelsMs[N - 1]. */
  get delayLevelsMs(): readonly number[] {
    return this.#core.delayLevelsMs;
  }
  /** Largest whole record this store takes (maxMessageSize plus header and properties). */
  get recordBytesMax(): number {
    return this.#core.recordBytesMax;
  }
  get abortPath(): string {
    return joinPath(this.#core.root, "abort");
  }
  get dispatchedOffset(): number {
    return this.#core.dispatcher.dispatchedOffset;
  }
  /** Offset below which consumers may read: flushed bytes under SYNC_FLUSH, else written. */
  get confirmOffset(): number {
    return this.#core.config.flushDiskType === "SYNC_FLUSH"
      ? this.#core.groupCommit.flushedOffset
      : this.#core.commitLog.wroteOffset;
  }
  get writable(): boolean {
    return this.#core.gate.writable;
  }
  /** End of the written CommitLog (past a closing BLANK: the next segment's start). */
  get maxPhysicalOffset(): number {
    return this.#core.commitLog.wroteOffset;
  }
  /** Start of the oldest segment kept; equal to maxPhysicalOffset when the log is empty. */
  get minPhysicalOffset(): number {
    return this.#core.commitLog.minOffset;
  }
  /** Start of the newest segment (where a replica that copies only the last file starts). */
  get lastSegmentOffset(): number {
    return this.#core.commitLog.segments.at(-1)?.startOffset ?? this.minPhysicalOffset;
  }

  /** Durations of the CommitLog's flushes since open. */
  flushDurations(): DurationCounts {
    return this.#core.groupCommit.flushTimes.read();
  }

  stats(): StoreStats {
    const { commitLog, groupCommit, dispatcher, gate } = this.#core;
    return {
      wroteOffset: commitLog.wroteOffset,
      flushedOffset: groupCommit.flushedOffset,
      confirmOffset: this.confirmOffset,
      dispatchedOffset: dispatcher.dispatchedOffset,
      minPhysicalOffset: commitLog.minOffset,
      segments: commitLog.segments.length,
      corruptReads: this.#reader.corruptReads,
      writable: gate.writable,
      writableChanges: gate.changes,
    };
  }

  /** The parts, for storage tests that check files and queues directly. */
  [STORE_CORE](): StoreCore {
    return this.#core;
  }

  /**
   * Calls `listener` after each write reaches the kernel, with the new written end (the
   * replication master streams from it). Returns the unsubscribe function.
   */
  onCommitLogWritten(listener: (wroteOffset: number) => void): () => void {
    this.#writtenListeners.add(listener);
    return () => this.#writtenListeners.delete(listener);
  }

  onArrival(listener: ArrivalListener) {
    this.#core.dispatcher.onArrival(listener);
  }

  /** Opens the folder, recovers (printing progress on long scans) and marks the run unclean. */
  async open(
    options: { onRecoveryProgress?: (p: RecoveryProgress) => void } = {},
  ): Promise<RecoveryReport> {
    this.#recovery = await openStore(this.#core, {
      abortPath: this.abortPath,
      onProgress: options.onRecoveryProgress,
      onWritten: (wrote) => {
        for (const listener of this.#writtenListeners) listener(wrote);
      },
    });
    return this.#recovery;
  }

  /** Starts the background loops: async flush, checkpoint, retention. Stopped by close(). */
  start(): void {
    const { config, groupCommit, log } = this.#core;
    const every = (ms: number, f: () => Promise<unknown> | void) => {
      const t = setInterval(() => {
        Promise.resolve(f()).catch((err) =>
          log("error", "store background task failed", { err: String(err) })
        );
      }, ms);
      (t as { unref?: () => void }).unref?.();
      this.#timers.push(t);
    };
    if (config.flushDiskType === "ASYNC_FLUSH") {
      every(config.flushIntervalCommitLog, () => groupCommit.flush());
    }
    // Periodic checkpoints sync only the ConsumeQueues due (CqSyncPolicy): with traffic
    // spread over thousands of queues, syncing each at every checkpoint was most of the
    // work (bench/README.md "Round 3 (branch hot-start)", "Many topics").
    const cqSync = {
      leastUnits: Math.ceil((config.flushConsumeQueueLeastPages * 4096) / CQ_UNIT_BYTES),
      maxSkips: Math.floor(
        config.flushConsumeQueueThoroughInterval / config.flushIntervalConsumeQueue,
      ) - 1,
    };
    every(config.flushIntervalConsumeQueue, () => this.#core.checkpoints.run(cqSync));
    every(this.#core.config.cleanResourceInterval, () => this.#retention.run({ manual: false }));
    every(config.noSpaceRetryMs, () => this.#resumeIfSpace());
  }

  /** After a write found the disk full: resumes writes when space is back (no_space.ts). */
  #resumeIfSpace(): Promise<boolean> {
    this.#resuming ??= resumeIfSpace(this.#core).finally(() => (this.#resuming = undefined));
    return this.#resuming;
  }

  /** Appends one message; resolves when it is written (ASYNC_FLUSH) or flushed (SYNC_FLUSH). */
  putMessage(input: MessageInput): Promise<PutResult> {
    try {
      return putPrepared(this.#core, prepareRecord(input, this.#core.config.maxMessageSize));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Appends several messages written together; each settles on its own (one bad item fails alone). */
  putMessages(inputs: MessageInput[]): Promise<PutResult>[] {
    return inputs.map((input) => this.putMessage(input));
  }

  /**
   * Flushes every ConsumeQueue and the index, then records how far they are durable. Recovery starts
   * from `dispatchSafeOffset`, so it must never pass bytes the CommitLog has not synced.
   */
  checkpoint(): Promise<void> {
    return this.#core.checkpoints.run();
  }

  /**
   * Resolves once what was written is as durable as this store's flush mode promises: under
   * SYNC_FLUSH when everything written is fdatasynced or flushing failed (then `writable`
   * is false), so a replica acknowledges only what is durable; under ASYNC_FLUSH at once.
   */
  async durable(): Promise<void> {
    if (this.#core.config.flushDiskType === "SYNC_FLUSH") await this.#core.groupCommit.idle();
  }

  // ---- replication (reference/rocketmq.md §15; runtime/ha/replication.ts) ----

  /** Whole records from `from`: see storage/ha/replica_apply.ts. */
  readCommitLogBytes(from: number, maxBytes: number, endOffset = Infinity): CommitLogChunk {
    return readCommitLogBytes(this.#core, from, maxBytes, endOffset);
  }

  /** Appends bytes copied from the master's CommitLog: see storage/ha/replica_apply.ts. */
  appendReplicated(physicalOffset: number, bytes: Uint8Array): Promise<ReplicatedAppend> {
    try {
      return appendReplicated(this.#core, physicalOffset, bytes);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Drops the CommitLog at and after `offset`: see storage/ha/replica_truncate.ts. */
  truncateCommitLogTo(offset: number): Promise<void> {
    return truncateCommitLogTo(this.#core, offset);
  }

  // ---- reads (message_reader.ts) ----

  getMessage(
    topic: string,
    queueId: number,
    offset: number,
    options: { maxMsgNums: number; maxBytes: number; filter?: MessageFilter },
  ): GetMessageResult {
    return this.#reader.getMessage(topic, queueId, offset, options);
  }

  /** The record at a CommitLog offset (view by message offset id). */
  lookMessageByOffset(commitLogOffset: number): MessageRecord | undefined {
    return this.#reader.lookMessageByOffset(commitLogOffset);
  }

  /** The record at a CommitLog offset with its bytes as stored (remoting's view by id). */
  lookRecord(commitLogOffset: number): { record: MessageRecord; bytes: Uint8Array } | undefined {
    return this.#reader.lookRecord(commitLogOffset);
  }

  /** Messages of `topic` whose KEYS hold `key` or whose UNIQ_KEY is `key`, newest first. */
  queryMessage(
    topic: string,
    key: string,
    options: { maxNum: number; beginTimestamp: number; endTimestamp: number },
  ): MessageRecord[] {
    return this.#reader.queryMessage(topic, key, options);
  }

  /** Up to `count` ConsumeQueue units of a queue from `queueOffset` (within one CQ file). */
  queueUnits(topic: string, queueId: number, queueOffset: number, count: number): CqUnit[] {
    return this.#reader.queueUnits(topic, queueId, queueOffset, count);
  }

  getMaxOffsetInQueue(topic: string, queueId: number): number {
    return this.#core.consumeQueues.find(topic, queueId)?.maxOffset ?? 0;
  }
  getMinOffsetInQueue(topic: string, queueId: number): number {
    return this.#core.consumeQueues.find(topic, queueId)?.minOffset ?? 0;
  }

  /** First queue offset stored at or after `timestamp` (SEARCH_OFFSET_BY_TIMESTAMP). */
  getOffsetInQueueByTime(topic: string, queueId: number, timestamp: number): number {
    return this.#reader.getOffsetInQueueByTime(topic, queueId, timestamp);
  }

  /** Deletes expired files now (admin request or tests); same rules as the timer. */
  deleteExpiredFiles(manual = true): Promise<number> {
    return this.#retention.run({ manual });
  }

  /** Removes a topic's ConsumeQueues; its records age out of the CommitLog. */
  deleteTopic(topic: string) {
    this.#core.consumeQueues.destroyTopic(topic);
    this.#core.sequencer.deleteTopic(topic);
  }

  /** Clean shutdown: write what is gathered, flush, checkpoint, remove the abort file. */
  async close(): Promise<void> {
    if (!this.#core.gate.open) return;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await closeStore(this.#core, this.abortPath);
  }
}
