// The message store: CommitLog + flush + ConsumeQueues + index + checkpoint, behind one
// put/get surface (RocketMQ's DefaultMessageStore, minus the network). It knows no HTTP,
// lease or wall clock beyond the `nowMs` it is handed.
import { PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY } from "./message/message_const.ts";
import { setImmediate } from "node:timers";
import type { FilePort } from "./file_port.ts";
import { joinPath } from "./file_port.ts";
import { type StoreConfig, zeroFillSegments } from "./config.ts";
import { StoreError } from "./errors.ts";
import { CommitLog } from "./commit_log/commit_log.ts";
import { GroupCommit } from "./commit_log/group_commit.ts";
import { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import type { ConsumeQueue, CqUnit } from "./consume_queue/consume_queue.ts";
import { StoreCheckpoint } from "./checkpoint.ts";
import {
  type MessageInput,
  type MessageRecord,
  type PreparedRecord,
  prepareRecord,
  storeTimestampAt,
} from "./message/record.ts";
import {
  buildsConsumeQueue,
  consumeQueueTagsCode,
  type DispatchRequest,
  dispatchRequestOf,
  keysOf,
  parseDelayLevels,
  tagsCodeOf,
} from "./dispatch_request.ts";
import { IndexService } from "./index/index_service.ts";
import { recoverStore, type RecoveryReport } from "./recovery.ts";
import { Retention } from "./retention.ts";
import {
  type CommitLogChunk,
  isRecordHead,
  readWholeRecords,
  verifyReplicated,
} from "./commit_log/replica_io.ts";
import { ReplicaError } from "./ha/replica_errors.ts";
import {
  readTruncateMarker,
  removeTruncateMarker,
  writeTruncateMarker,
} from "./ha/truncate_marker.ts";

export type Durability = "WRITTEN" | "FLUSHED";

export interface PutResult {
  topic: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  size: number;
  storeTimestamp: number;
  durability: Durability;
}

export type GetMessageStatus =
  | "FOUND"
  | "NO_MATCHED_MESSAGE"
  | "NO_MATCHED_LOGIC_QUEUE"
  | "NO_MESSAGE_IN_QUEUE"
  | "OFFSET_TOO_SMALL"
  | "OFFSET_OVERFLOW_ONE"
  | "OFFSET_OVERFLOW_BADLY"
  | "OFFSET_FOUND_NULL";

export interface StoredMessage {
  queueOffset: number;
  record: MessageRecord;
}

export interface GetMessageResult {
  status: GetMessageStatus;
  messages: StoredMessage[];
  nextBeginOffset: number;
  minOffset: number;
  maxOffset: number;
}

/** Tag filter: undefined or "*" matches all; otherwise the set of tags (`A || B`). */
export interface MessageFilter {
  tags?: Set<string>;
}

export type ArrivalListener = (topic: string, queueId: number, maxOffset: number) => void;

/** What appendReplicated() placed: [fromOffset, toOffset) of the CommitLog. */
export interface ReplicatedAppend {
  fromOffset: number;
  toOffset: number;
  records: number;
  durability: Durability;
}

export interface StoreLog {
  (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>): void;
}

export interface MessageStoreOptions {
  files: FilePort;
  config: StoreConfig;
  nowMs: () => number;
  log?: StoreLog;
  /** Percent of the disk in use (0-100); retention deletes early when it is high. */
  diskUsedRatio?: () => number;
}

export class MessageStore {
  readonly files: FilePort;
  readonly config: StoreConfig;
  readonly commitLog: CommitLog;
  readonly groupCommit: GroupCommit;
  readonly consumeQueues: ConsumeQueueStore;
  readonly index: IndexService;
  /** messageDelayLevel in ms: level N delays by delayLevelsMs[N - 1]. */
  readonly delayLevelsMs: readonly number[];
  readonly #nowMs: () => number;
  readonly #log: StoreLog;
  readonly #retention: Retention;
  #checkpoint: StoreCheckpoint | undefined;
  // Next queue offset per topic, then per queue id: nested so a put looks it up without
  // building a "topic\0queueId" key string.
  #topicQueueTable = new Map<string, Map<number, number>>();
  #undispatched: DispatchRequest[] = [];
  #dispatchedOffset = 0;
  #lastStoreTimestamp = 0;
  #lastLogicsTimestamp = 0;
  #writeTick: Promise<void> | undefined;
  #writeFailure: Error | undefined;
  #arrival: ArrivalListener = () => {};
  #timers: ReturnType<typeof setInterval>[] = [];
  #checkpointing: Promise<void> | undefined;
  #writtenListeners = new Set<(wroteOffset: number) => void>();
  #truncating = false;
  #open = false;
  diskFull = false;
  recovery: RecoveryReport | undefined;

  constructor(options: MessageStoreOptions) {
    this.files = options.files;
    this.config = options.config;
    this.#nowMs = options.nowMs;
    this.#log = options.log ?? (() => {});
    const root = this.config.storePathRootDir;
    this.delayLevelsMs = parseDelayLevels(this.config.messageDelayLevel);
    this.commitLog = new CommitLog({
      files: this.files,
      dir: joinPath(root, "commitlog"),
      segmentBytes: this.config.mappedFileSizeCommitLog,
      writeBatchBytesMax: this.config.writeBatchBytesMax,
      zeroFill: zeroFillSegments(this.config),
      tailCacheBytes: this.config.commitLogTailCacheBytes,
    });
    this.groupCommit = new GroupCommit(this.commitLog, {
      syncFlushTimeoutMs: this.config.syncFlushTimeout,
    });
    this.consumeQueues = new ConsumeQueueStore(
      this.files,
      root,
      this.config.mappedFileSizeConsumeQueueUnits,
    );
    this.index = new IndexService({
      files: this.files,
      storePathRootDir: root,
      hashSlotNum: this.config.maxHashSlotNum,
      indexNum: this.config.maxIndexNum,
      nowMs: this.#nowMs,
    });
    this.#retention = new Retention(this, {
      nowMs: this.#nowMs,
      diskUsedRatio: options.diskUsedRatio ?? (() => 0),
      log: this.#log,
    });
  }

  get abortPath(): string {
    return joinPath(this.config.storePathRootDir, "abort");
  }
  get dispatchedOffset(): number {
    return this.#dispatchedOffset;
  }
  /** Offset below which consumers may read: flushed bytes under SYNC_FLUSH, else written. */
  get confirmOffset(): number {
    return this.config.flushDiskType === "SYNC_FLUSH"
      ? this.groupCommit.flushedOffset
      : this.commitLog.wroteOffset;
  }
  get writable(): boolean {
    return this.#open && !this.groupCommit.failure && !this.#writeFailure && !this.diskFull &&
      !this.#truncating;
  }
  /** End of the written CommitLog (past a closing BLANK: the next segment's start). */
  get maxPhysicalOffset(): number {
    return this.commitLog.wroteOffset;
  }
  /** Start of the oldest segment kept; equal to maxPhysicalOffset when the log is empty. */
  get minPhysicalOffset(): number {
    return this.commitLog.minOffset;
  }
  get #recordBytesMax(): number {
    return this.config.maxMessageSize + 65_536;
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
    this.#arrival = listener;
  }

  /** Opens the folder, recovers (printing progress on long scans) and marks the run unclean. */
  async open(): Promise<RecoveryReport> {
    const root = this.config.storePathRootDir;
    this.files.mkdirp(root);
    const abnormal = this.files.exists(this.abortPath);
    this.commitLog.load();
    this.consumeQueues.load();
    this.index.load();
    this.#checkpoint = new StoreCheckpoint(this.files, joinPath(root, "checkpoint"), root);
    const truncateTo = readTruncateMarker(this.files, root);
    const report = await recoverStore({
      store: this,
      checkpoint: this.#checkpoint.read(),
      abnormal,
      log: this.#log,
      dispatch: (req) => this.#dispatchOne(req),
      truncateTo,
    });
    this.recovery = report;
    this.#dispatchedOffset = report.endOffset;
    this.groupCommit.reset(report.endOffset);
    this.#lastStoreTimestamp = report.lastStoreTimestamp;
    this.commitLog.onWritten((wrote) => {
      if (this.config.flushDiskType === "ASYNC_FLUSH") this.#dispatchSafely(wrote);
      for (const listener of this.#writtenListeners) listener(wrote);
    });
    this.groupCommit.onFlushed((flushed) => {
      if (this.config.flushDiskType === "SYNC_FLUSH") this.#dispatchSafely(flushed);
    });
    const abort = this.files.open(this.abortPath, { create: true });
    abort.close();
    await this.files.syncDir(root);
    this.#open = true;
    await this.checkpoint();
    // Only now is the cut durable everywhere (CommitLog, ConsumeQueues, index, checkpoint).
    if (truncateTo !== undefined) await removeTruncateMarker(this.files, root);
    return report;
  }

  /** Starts the background loops: async flush, checkpoint, retention. Stopped by close(). */
  start(): void {
    const every = (ms: number, f: () => Promise<unknown> | void) => {
      const t = setInterval(() => {
        Promise.resolve(f()).catch((err) =>
          this.#log("error", "store background task failed", { err: String(err) })
        );
      }, ms);
      (t as { unref?: () => void }).unref?.();
      this.#timers.push(t);
    };
    if (this.config.flushDiskType === "ASYNC_FLUSH") {
      every(this.config.flushIntervalCommitLog, () => this.groupCommit.flush());
    }
    every(this.config.flushIntervalConsumeQueue, () => this.checkpoint());
    every(10_000, () => this.#retention.run({ manual: false }));
  }

  /** Appends one message; resolves when it is written (ASYNC_FLUSH) or flushed (SYNC_FLUSH). */
  putMessage(input: MessageInput): Promise<PutResult> {
    try {
      return this.#put(prepareRecord(input, this.config.maxMessageSize));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Appends several messages written together; each settles on its own (one bad item fails alone). */
  putMessages(inputs: MessageInput[]): Promise<PutResult>[] {
    return inputs.map((input) => this.putMessage(input));
  }

  #put(prepared: PreparedRecord): Promise<PutResult> {
    this.#checkWritable();
    // PREPARED and ROLLBACK records get no ConsumeQueue unit and QUEUEOFFSET 0 (RocketMQ),
    // as recovery and replicas derive from the record's SYSFLAG.
    const sysFlag = prepared.sysFlag;
    const inQueue = buildsConsumeQueue(sysFlag);
    const queues = inQueue ? this.#queuesOf(prepared.topic) : undefined;
    const queueOffset = queues === undefined ? 0 : queues.get(prepared.queueId) ??
      (this.consumeQueues.find(prepared.topic, prepared.queueId)?.maxOffset ?? 0);
    // Store time rises in file order (it is set inside RocketMQ's put lock).
    const storeTimestamp = Math.max(this.#nowMs(), this.#lastStoreTimestamp);
    this.#lastStoreTimestamp = storeTimestamp;
    const position = this.commitLog.append(prepared, queueOffset, storeTimestamp);
    queues?.set(prepared.queueId, queueOffset + 1);
    const props = prepared.properties;
    this.#undispatched.push({
      topic: prepared.topic,
      queueId: prepared.queueId,
      commitLogOffset: position.physicalOffset,
      msgSize: position.size,
      tagsCode: consumeQueueTagsCode(prepared.topic, props, storeTimestamp, this.delayLevelsMs),
      storeTimestamp,
      consumeQueueOffset: queueOffset,
      keys: keysOf(props.get(PROPERTY_KEYS)),
      uniqKey: props.get(PROPERTY_UNIQ_KEY),
      sysFlag,
    });
    const end = position.physicalOffset + position.size;
    const result = (durability: Durability): PutResult => ({
      topic: prepared.topic,
      queueId: prepared.queueId,
      queueOffset,
      commitLogOffset: position.physicalOffset,
      size: position.size,
      storeTimestamp,
      durability,
    });
    const written = this.#scheduleWrite();
    if (this.config.flushDiskType === "SYNC_FLUSH") {
      return written.then(() => this.groupCommit.waitFlushed(end)).then(() => result("FLUSHED"));
    }
    return written.then(() =>
      result(end <= this.groupCommit.flushedOffset ? "FLUSHED" : "WRITTEN")
    );
  }

  /**
   * One write for all appends made before the event loop next checks for I/O: under load
   * many requests are parsed in one loop turn, and they share one writeSync (a syscall
   * through Deno's node:fs costs 10-15 µs; the copy of a 1 KiB record far less).
   */
  #scheduleWrite(): Promise<void> {
    if (!this.#writeTick) {
      this.#writeTick = new Promise<void>((resolve, reject) => {
        setImmediate(() => {
          this.#writeTick = undefined;
          try {
            this.commitLog.writePending();
            resolve();
          } catch (err) {
            // A failed write leaves the tail unknown: stop taking writes; recovery sorts it out.
            this.#writeFailure = err as Error;
            reject(
              new StoreError(
                "STORE_NOT_WRITABLE",
                "Cannot accept writes as a CommitLog write failed",
                { cause: err },
              ),
            );
          }
        });
      });
    }
    return this.#writeTick;
  }

  #checkWritable() {
    if (this.writable) return;
    const why = !this.#open
      ? "the store is not open"
      : this.#truncating
      ? "a CommitLog truncation is in progress"
      : this.diskFull
      ? `disk use passed diskSpaceWarningLevelRatio ${this.config.diskSpaceWarningLevelRatio}%`
      : "a CommitLog write or fdatasync failed";
    throw new StoreError("STORE_NOT_WRITABLE", `Cannot accept writes as ${why}`, {
      cause: this.groupCommit.failure ?? this.#writeFailure,
    });
  }

  /**
   * A failed ConsumeQueue or index write leaves derived state behind the log: stop taking
   * writes (the restart's recovery rebuilds it) rather than acknowledge what consumers
   * cannot see.
   */
  #dispatchSafely(confirm: number) {
    if (this.#writeFailure) return;
    try {
      this.#dispatchUpTo(confirm);
    } catch (err) {
      this.#writeFailure = err as Error;
      this.#log("error", "dispatch failed; the store stops taking writes", { err: String(err) });
    }
  }

  /** Builds ConsumeQueue and index entries for records now visible, then wakes waiters. */
  #dispatchUpTo(confirm: number) {
    const touched = new Set<ConsumeQueue>();
    let n = 0;
    while (n < this.#undispatched.length) {
      const req = this.#undispatched[n];
      if (req.commitLogOffset + req.msgSize > confirm) break;
      const cq = this.#dispatchOne(req);
      if (cq) touched.add(cq);
      this.#dispatchedOffset = req.commitLogOffset + req.msgSize;
      n++;
    }
    if (n === 0) return;
    this.#undispatched = n === this.#undispatched.length ? [] : this.#undispatched.slice(n);
    for (const cq of touched) this.#arrival(cq.topic, cq.queueId, cq.maxOffset);
    // A BLANK at a segment end is not a record: dispatch has passed it when the log has.
    if (this.#undispatched.length === 0) {
      this.#dispatchedOffset = Math.max(
        this.#dispatchedOffset,
        Math.min(confirm, this.commitLog.wroteOffset),
      );
    }
  }

  #dispatchOne(req: DispatchRequest): ConsumeQueue | undefined {
    let cq: ConsumeQueue | undefined;
    if (buildsConsumeQueue(req.sysFlag)) {
      cq = this.consumeQueues.getOrCreate(req.topic, req.queueId);
      cq.put(req.consumeQueueOffset, req.commitLogOffset, req.msgSize, req.tagsCode);
      this.#lastLogicsTimestamp = req.storeTimestamp;
    }
    if (this.config.messageIndexEnable) this.index.put(req);
    return cq;
  }

  #queuesOf(topic: string): Map<number, number> {
    let queues = this.#topicQueueTable.get(topic);
    if (queues === undefined) this.#topicQueueTable.set(topic, queues = new Map());
    return queues;
  }

  /** Recovery sets the next queue offsets from what the ConsumeQueues hold. */
  resetTopicQueueTable() {
    this.#topicQueueTable.clear();
  }

  /**
   * Flushes ConsumeQueues and index, then records how far they are durable. Recovery starts
   * from `dispatchSafeOffset`, so it must never pass bytes the CommitLog has not synced.
   */
  checkpoint(): Promise<void> {
    if (!this.#checkpointing) {
      this.#checkpointing = this.#writeCheckpoint().finally(
        () => (this.#checkpointing = undefined),
      );
    }
    return this.#checkpointing;
  }

  async #writeCheckpoint() {
    if (!this.#checkpoint) return;
    const dispatched = this.#dispatchedOffset;
    const logicsTs = this.#lastLogicsTimestamp;
    await this.consumeQueues.datasyncAll();
    await this.index.flush();
    const flushed = this.groupCommit.flushedOffset;
    await this.#checkpoint.write({
      physicMsgTimestamp: this.#lastStoreTimestamp,
      logicsMsgTimestamp: logicsTs,
      indexMsgTimestamp: logicsTs,
      flushedOffset: flushed,
      dispatchSafeOffset: Math.min(dispatched, flushed),
    });
  }

  // ---- replication (reference/rocketmq.md §15; runtime/ha/replication.ts) ----

  /**
   * Whole records of the CommitLog from `from` (a record boundary in [min, max]), at most
   * `maxBytes` unless one record is larger, never past `endOffset` or a segment end; a
   * closing BLANK is included and `nextOffset` is then the next segment's start. Only
   * written bytes are read. Throws REPLICA_OFFSET_ILLEGAL outside the log and
   * CorruptRecordError when `from` is not a record boundary.
   */
  readCommitLogBytes(from: number, maxBytes: number, endOffset = Infinity): CommitLogChunk {
    const min = this.minPhysicalOffset, max = this.maxPhysicalOffset;
    if (!Number.isSafeInteger(from) || from < min || from > max) {
      throw new ReplicaError(
        "REPLICA_OFFSET_ILLEGAL",
        `Cannot read CommitLog bytes from offset ${from} as the log holds [${min}, ${max})`,
      );
    }
    return readWholeRecords(this.commitLog, from, maxBytes, endOffset, this.#recordBytesMax);
  }

  /**
   * Appends bytes copied from the master's CommitLog at `physicalOffset`, which must be this
   * log's end (an empty log also takes any segment start). Each record is verified (whole,
   * body CRC, PHYSICALOFFSET equal to where it lands, inside its segment, next queue offset
   * of its queue) and dispatched to ConsumeQueues and index as a put is, with the queue
   * offsets the records carry. The bytes are written before this returns, so the next chunk
   * may be appended at once; the promise settles as a put does: after fdatasync under
   * SYNC_FLUSH (group commit), once written under ASYNC_FLUSH.
   *
   * Errors (the promise rejects): STORE_NOT_WRITABLE (StoreError) as for puts;
   * REPLICA_OFFSET_MISMATCH when the offset is not the end or local puts are pending;
   * REPLICA_RECORD_CORRUPT at the first bad record, after the good records before it were
   * appended (error.offset is where they end): nothing beyond the last good record is.
   */
  appendReplicated(physicalOffset: number, bytes: Uint8Array): Promise<ReplicatedAppend> {
    try {
      return this.#appendReplicated(physicalOffset, bytes);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #appendReplicated(physicalOffset: number, bytes: Uint8Array): Promise<ReplicatedAppend> {
    this.#checkWritable();
    const max = this.maxPhysicalOffset;
    const segmentBytes = this.commitLog.segmentBytes;
    const emptyLog = this.commitLog.segments.length === 0;
    if (
      this.commitLog.hasPending || this.#writeTick ||
      (physicalOffset !== max && !(emptyLog && physicalOffset % segmentBytes === 0))
    ) {
      throw new ReplicaError(
        "REPLICA_OFFSET_MISMATCH",
        `Cannot append replicated bytes at offset ${physicalOffset} as the CommitLog ends at ${max}${
          this.commitLog.hasPending || this.#writeTick ? " with local puts pending" : ""
        }`,
      );
    }
    if (physicalOffset !== max) {
      // An empty replica starts where the master's retained log starts.
      this.commitLog.setEnd(physicalOffset);
      this.groupCommit.reset(physicalOffset);
      this.#dispatchedOffset = physicalOffset;
    }
    const verified = verifyReplicated(bytes, physicalOffset, {
      segmentBytes,
      recordBytesMax: this.#recordBytesMax,
      nextQueueOffset: (topic, queueId) => this.#nextQueueOffset(topic, queueId),
    });
    let records = 0;
    try {
      for (const item of verified.items) {
        if (item.kind === "blank") {
          this.commitLog.appendVerified(item.bytes, true);
          continue;
        }
        const record = item.record;
        if (buildsConsumeQueue(record.sysFlag)) {
          this.#queuesOf(record.topic).set(record.queueId, record.queueOffset + 1);
        }
        this.#undispatched.push(dispatchRequestOf(record, this.delayLevelsMs));
        this.#lastStoreTimestamp = Math.max(this.#lastStoreTimestamp, record.storeTimestamp);
        this.commitLog.appendVerified(item.bytes, false);
        records++;
      }
      this.commitLog.writePending();
    } catch (err) {
      this.#writeFailure = err as Error;
      throw new StoreError(
        "STORE_NOT_WRITABLE",
        "Cannot accept writes as a CommitLog write failed",
        {
          cause: err,
        },
      );
    }
    const end = verified.end;
    const durable: Promise<Durability> = this.config.flushDiskType === "SYNC_FLUSH"
      ? this.groupCommit.waitFlushed(end).then(() => "FLUSHED")
      : Promise.resolve(end <= this.groupCommit.flushedOffset ? "FLUSHED" : "WRITTEN");
    if (verified.failure) {
      durable.catch(() => {}); // the good prefix is flushed with the next sync all the same
      throw new ReplicaError(
        "REPLICA_RECORD_CORRUPT",
        `Cannot append replicated record at offset ${verified.failure.offset} as ${verified.failure.reason}; the ${records} records before it were appended`,
        verified.failure.offset,
      );
    }
    return durable.then((durability) => ({
      fromOffset: physicalOffset,
      toOffset: end,
      records,
      durability,
    }));
  }

  /** The queue offset the next record of a queue must carry; undefined for an empty queue. */
  #nextQueueOffset(topic: string, queueId: number): number | undefined {
    const next = this.#topicQueueTable.get(topic)?.get(queueId);
    if (next !== undefined) return next;
    const cq = this.consumeQueues.find(topic, queueId);
    return cq && cq.maxOffset > cq.minOffset ? cq.maxOffset : undefined;
  }

  /**
   * Drops the CommitLog at and after `offset` (a record boundary in [min, max]), with the
   * ConsumeQueue units and index entries that point there, for a returning old master or a
   * slave whose tail diverged. Puts and replicated appends are refused meanwhile (writes
   * gathered before are written and synced first, then cut). Crash-safe: a durable marker
   * is written first and removed last; a crash in between is finished by recovery, so the
   * dropped records are never served again. When it resolves the cut is durable: segments
   * removed (folder fsynced), the tail zeroed and fdatasynced, ConsumeQueues and index
   * synced, and a checkpoint at `offset` written. Queue offsets continue from what the
   * ConsumeQueues hold. Errors: REPLICA_OFFSET_ILLEGAL for a bad offset (nothing changed);
   * STORE_NOT_WRITABLE when the store is closed, failed or already truncating.
   */
  async truncateCommitLogTo(offset: number): Promise<void> {
    this.#checkWritable();
    this.#truncating = true;
    try {
      await this.#writeTick?.catch(() => {});
      this.commitLog.writePending();
      await this.groupCommit.idle();
      await this.#checkpointing?.catch(() => {});
      // A write or sync that failed meanwhile leaves the tail unknown: refuse as puts do.
      this.#truncating = false;
      this.#checkWritable();
      this.#truncating = true;
      this.#checkTruncateTarget(offset);
      if (offset === this.maxPhysicalOffset) return;
      const run = this.#truncateFiles(offset).catch((err) => {
        // Cut halfway: the marker stays, and the restart's recovery finishes the cut.
        this.#writeFailure = err as Error;
        throw new StoreError(
          "STORE_NOT_WRITABLE",
          `Cannot finish truncating the CommitLog to offset ${offset}; the store stops taking writes and its restart completes the cut`,
          { cause: err },
        );
      });
      // Checkpoints wait for the cut (they would write offsets it is changing).
      const guarded = run.finally(() => (this.#checkpointing = undefined));
      guarded.catch(() => {});
      this.#checkpointing = guarded;
      await run;
    } finally {
      this.#truncating = false;
    }
  }

  #checkTruncateTarget(offset: number) {
    const min = this.minPhysicalOffset, max = this.maxPhysicalOffset;
    const illegal = (why: string) =>
      new ReplicaError(
        "REPLICA_OFFSET_ILLEGAL",
        `Cannot truncate the CommitLog to offset ${offset} as ${why}`,
      );
    if (!Number.isSafeInteger(offset) || offset < min || offset > max) {
      throw illegal(`the log holds [${min}, ${max}]`);
    }
    if (offset === max || offset % this.commitLog.segmentBytes === 0) return;
    const head = this.commitLog.read(offset, 8);
    if (!head || !isRecordHead(head)) throw illegal("it is not a record boundary");
  }

  async #truncateFiles(offset: number) {
    const root = this.config.storePathRootDir;
    await writeTruncateMarker(this.files, root, offset);
    this.#undispatched = this.#undispatched.filter((r) => r.commitLogOffset < offset);
    this.#dispatchedOffset = Math.min(this.#dispatchedOffset, offset);
    await this.commitLog.truncateTo(offset);
    this.groupCommit.reset(offset);
    for (const cq of this.consumeQueues.all()) cq.truncateFromPhysical(offset);
    this.#topicQueueTable.clear();
    await this.index.flush();
    await this.index.recoverAfterCrash(offset);
    await this.#writeCheckpoint();
    await removeTruncateMarker(this.files, root);
  }

  // ---- reads ----

  getMessage(
    topic: string,
    queueId: number,
    offset: number,
    options: { maxMsgNums: number; maxBytes: number; filter?: MessageFilter },
  ): GetMessageResult {
    const cq = this.consumeQueues.find(topic, queueId);
    if (!cq) {
      return {
        status: "NO_MATCHED_LOGIC_QUEUE",
        messages: [],
        nextBeginOffset: 0,
        minOffset: 0,
        maxOffset: 0,
      };
    }
    const minOffset = cq.minOffset, maxOffset = cq.maxOffset;
    const base = { messages: [] as StoredMessage[], minOffset, maxOffset };
    if (maxOffset === 0) return { ...base, status: "NO_MESSAGE_IN_QUEUE", nextBeginOffset: 0 };
    if (offset < minOffset) {
      return { ...base, status: "OFFSET_TOO_SMALL", nextBeginOffset: minOffset };
    }
    if (offset === maxOffset) {
      return { ...base, status: "OFFSET_OVERFLOW_ONE", nextBeginOffset: offset };
    }
    if (offset > maxOffset) {
      return { ...base, status: "OFFSET_OVERFLOW_BADLY", nextBeginOffset: maxOffset };
    }
    const tagCodes = options.filter?.tags
      ? new Set([...options.filter.tags].map(tagsCodeOf))
      : undefined;
    const messages: StoredMessage[] = [];
    let next = offset, bytes = 0;
    // RocketMQ scans max(16000 bytes, maxMsgNums x 20) of units when it filters; without a
    // filter every unit is taken, so reading more than maxMsgNums of them is waste.
    const scanMax = tagCodes ? Math.max(16_000 / 20, options.maxMsgNums * 20) : options.maxMsgNums;
    const units = cq.range(offset, scanMax);
    // Without a filter the records to read are known: one buffer holds them all (an
    // ArrayBuffer per record cost ~1 µs each on Deno). With one, each gets its own.
    let arena: Uint8Array | undefined, arenaAt = 0;
    if (!tagCodes) {
      let total = 0;
      for (const unit of units) {
        if (total > 0 && total + unit.size > options.maxBytes) break;
        total += unit.size;
      }
      arena = new Uint8Array(total);
    }
    for (const unit of units) {
      if (
        messages.length >= options.maxMsgNums ||
        (messages.length > 0 && bytes + unit.size > options.maxBytes)
      ) break;
      next = unit.queueOffset + 1;
      if (tagCodes && !tagCodes.has(unit.tagsCode | 0)) continue;
      const into = arena?.subarray(arenaAt, arenaAt += unit.size);
      const parsed = this.commitLog.readRecord(unit.commitLogOffset, unit.size, into);
      if (parsed.kind !== "record") continue; // removed by retention meanwhile
      // Hash codes can collide: confirm on the record's own tag.
      if (
        options.filter?.tags &&
        !options.filter.tags.has(parsed.record.properties.get(PROPERTY_TAGS) ?? "")
      ) continue;
      messages.push({ queueOffset: unit.queueOffset, record: parsed.record });
      bytes += unit.size;
    }
    const status = messages.length
      ? "FOUND"
      : next > offset
      ? "NO_MATCHED_MESSAGE"
      : "OFFSET_FOUND_NULL";
    return { ...base, status, messages, nextBeginOffset: next };
  }

  /** The record at a CommitLog offset (view by message offset id). */
  lookMessageByOffset(commitLogOffset: number): MessageRecord | undefined {
    const header = this.commitLog.read(commitLogOffset, 4);
    if (!header) return undefined;
    const size = new DataView(header.buffer, header.byteOffset).getInt32(0);
    if (size <= 0 || size > this.config.maxMessageSize + 65_536) return undefined;
    const parsed = this.commitLog.readRecord(commitLogOffset, size);
    return parsed.kind === "record" ? parsed.record : undefined;
  }

  /** Messages of `topic` whose KEYS hold `key` or whose UNIQ_KEY is `key`, newest first. */
  queryMessage(
    topic: string,
    key: string,
    options: { maxNum: number; beginTimestamp: number; endTimestamp: number },
  ): MessageRecord[] {
    const out: MessageRecord[] = [];
    for (const offset of this.index.queryByKey(topic, key, options)) {
      const record = this.lookMessageByOffset(offset);
      if (!record || record.topic !== topic) continue;
      if (
        record.properties.get(PROPERTY_UNIQ_KEY) === key ||
        keysOf(record.properties.get(PROPERTY_KEYS)).includes(key)
      ) {
        out.push(record);
      }
    }
    return out;
  }

  getMaxOffsetInQueue(topic: string, queueId: number): number {
    return this.consumeQueues.find(topic, queueId)?.maxOffset ?? 0;
  }
  getMinOffsetInQueue(topic: string, queueId: number): number {
    return this.consumeQueues.find(topic, queueId)?.minOffset ?? 0;
  }

  /** First queue offset stored at or after `timestamp` (SEARCH_OFFSET_BY_TIMESTAMP). */
  getOffsetInQueueByTime(topic: string, queueId: number, timestamp: number): number {
    const cq = this.consumeQueues.find(topic, queueId);
    if (!cq) return 0;
    return cq.offsetAtTime(timestamp, (unit: CqUnit) => this.#storeTimeOf(unit));
  }

  #storeTimeOf(unit: CqUnit): number | undefined {
    const head = this.commitLog.read(unit.commitLogOffset, 96);
    if (!head) return undefined;
    const view = new DataView(head.buffer, head.byteOffset);
    const at = storeTimestampAt(view.getInt32(36));
    return view.getInt32(at) * 2 ** 32 + view.getUint32(at + 4);
  }

  /** Deletes expired files now (admin request or tests); same rules as the timer. */
  deleteExpiredFiles(manual = true): Promise<number> {
    return this.#retention.run({ manual });
  }

  /** Removes a topic's ConsumeQueues; its records age out of the CommitLog. */
  deleteTopic(topic: string) {
    this.consumeQueues.destroyTopic(topic);
    this.#topicQueueTable.delete(topic);
  }

  /** Clean shutdown: write what is gathered, flush, checkpoint, remove the abort file. */
  async close(): Promise<void> {
    if (!this.#open) return;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.#writeTick?.catch(() => {});
    this.commitLog.writePending();
    await this.groupCommit.idle();
    const clean = !this.groupCommit.failure && !this.#writeFailure;
    if (clean) {
      this.#dispatchUpTo(this.groupCommit.flushedOffset);
      await this.#checkpointing;
      await this.checkpoint();
    }
    this.#open = false;
    await this.commitLog.close();
    this.consumeQueues.close();
    await this.index.close().catch(() => {});
    this.#checkpoint?.close();
    if (clean && this.#undispatched.length === 0) {
      this.files.remove(this.abortPath);
      await this.files.syncDir(this.config.storePathRootDir);
    }
  }
}
