// The key index over all IndexFiles in <root>/index/ (RocketMQ IndexService.java): dispatch
// puts `topic#UNIQ_KEY` and `topic#k` for each KEYS entry into the newest file, rolling to a
// new file when it is full; a query walks files newest first. Files are named by creation
// time, yyyyMMddHHmmssSSS local time, so name order is creation order.
import type { FilePort } from "../file_port.ts";
import { joinPath } from "../file_port.ts";
import { assert, StoreError } from "../errors.ts";
import { defaultStoreConfig } from "../config.ts";
import type { DispatchRequest } from "../dispatch_request.ts";
import { TRANSACTION_ROLLBACK_TYPE } from "../dispatch_request.ts";
import { SYSFLAG_TRANSACTION_MASK } from "../message/record.ts";
import { IndexFile } from "./index_file.ts";
import {
  checkIndexLayout,
  IndexError,
  type IndexHeader,
  type IndexLayout,
  topicKeyHash,
} from "./index_layout.ts";

/** Most offsets one query returns (RocketMQ maxMsgsNumBatch). */
export const MAX_MSGS_NUM_BATCH = 64;
export const INDEX_DIR = "index";
const INDEX_FILE_NAME = /^\d{17}$/;

export interface IndexServiceOptions {
  files: FilePort;
  /** StoreConfig.storePathRootDir; the service owns its index/ folder. */
  storePathRootDir: string;
  /** Wall clock, epoch ms; names new files. */
  nowMs: () => number;
  /** StoreConfig.maxHashSlotNum; 5,000,000 by default. */
  hashSlotNum?: number;
  /** StoreConfig.maxIndexNum; 20,000,000 by default. */
  indexNum?: number;
}

export interface IndexQuery {
  /** Clamped to MAX_MSGS_NUM_BATCH, as RocketMQ does. */
  maxNum: number;
  /** Epoch ms, inclusive; entry times have whole-second resolution after the file's begin. */
  beginTimestamp: number;
  endTimestamp: number;
}

/** yyyyMMddHHmmssSSS in local time (RocketMQ UtilAll.timeMillisToHumanString). */
export function indexFileName(ms: number): string {
  const d = new Date(ms);
  const pad = (value: number, width: number) => String(value).padStart(width, "0");
  return pad(d.getFullYear(), 4) + pad(d.getMonth() + 1, 2) + pad(d.getDate(), 2) +
    pad(d.getHours(), 2) + pad(d.getMinutes(), 2) + pad(d.getSeconds(), 2) +
    pad(d.getMilliseconds(), 3);
}

export class IndexService {
  readonly dir: string;
  readonly layout: IndexLayout;
  #files: FilePort;
  #nowMs: () => number;
  #indexFiles: IndexFile[] = [];
  #loaded = false;
  /** Folder fsync of the newest created file; awaited by flush() before it reports success. */
  #nameDurable: Promise<void> = Promise.resolve();
  /** A failed fdatasync: what it wrote may be lost, so the index refuses to go on. */
  #failure: unknown = undefined;

  constructor(options: IndexServiceOptions) {
    const defaults = defaultStoreConfig(options.storePathRootDir);
    this.layout = {
      hashSlotNum: options.hashSlotNum ?? defaults.maxHashSlotNum,
      indexNum: options.indexNum ?? defaults.maxIndexNum,
    };
    checkIndexLayout(this.layout);
    this.dir = joinPath(options.storePathRootDir, INDEX_DIR);
    this.#files = options.files;
    this.#nowMs = options.nowMs;
  }

  /** Opens the existing files in name order; the last one is the active (writable) file. */
  load(): void {
    assert(!this.#loaded, "IndexService.load() runs once");
    this.#files.mkdirp(this.dir);
    const names = this.#files.list(this.dir).filter((name) => INDEX_FILE_NAME.test(name));
    for (let i = 0; i < names.length; i++) {
      const path = joinPath(this.dir, names[i]);
      this.#indexFiles.push(IndexFile.open(this.#files, path, this.layout, i === names.length - 1));
    }
    this.#loaded = true;
  }

  /** Name and header of each file, oldest first. */
  indexFiles(): { path: string; header: Readonly<IndexHeader> }[] {
    return this.#indexFiles.map((f) => ({ path: f.path, header: f.header }));
  }

  /**
   * Indexes one dispatched record. Memory only (no syscall) but when a file is created.
   * Records below the active file's endPhyOffset are already indexed, so re-dispatch after
   * a crash is harmless; ROLLBACK records are not indexed (RocketMQ buildIndex).
   */
  put(req: DispatchRequest): void {
    assert(this.#loaded, "IndexService.load() before put()");
    this.#checkWritable();
    if ((req.sysFlag & SYSFLAG_TRANSACTION_MASK) === TRANSACTION_ROLLBACK_TYPE) return;
    const active = this.#indexFiles.at(-1);
    if (active !== undefined && req.commitLogOffset < active.endPhyOffset) return;
    if (req.uniqKey) this.#putKey(topicKeyHash(req.topic, req.uniqKey), req);
    for (const key of req.keys) if (key.length > 0) this.#putKey(topicKeyHash(req.topic, key), req);
  }

  /**
   * Commit-log offsets of messages indexed under `topic#key` with a store time in
   * [beginTimestamp, endTimestamp], newest first. Matching is by keyHash only: a different
   * key with the same hash matches too, so the caller must read each message and re-check
   * its key text (as RocketMQ's client does).
   */
  queryByKey(topic: string, key: string, query: IndexQuery): number[] {
    assert(this.#loaded, "IndexService.load() before queryByKey()");
    const { maxNum, beginTimestamp: begin, endTimestamp: end } = query;
    if (topic.length === 0 || key.length === 0) {
      throw new IndexError(
        "INDEX_QUERY_ILLEGAL",
        "Cannot query the index by an empty topic or key",
      );
    }
    if (!Number.isInteger(maxNum) || maxNum < 1) {
      throw new IndexError("INDEX_QUERY_ILLEGAL", `Cannot query the index for maxNum ${maxNum}`);
    }
    if (!Number.isFinite(begin) || !Number.isFinite(end) || begin > end) {
      throw new IndexError(
        "INDEX_QUERY_ILLEGAL",
        `Cannot query the index for time range [${begin}, ${end}]`,
      );
    }
    const limit = Math.min(maxNum, MAX_MSGS_NUM_BATCH);
    const keyHash = topicKeyHash(topic, key);
    const out: number[] = [];
    for (let i = this.#indexFiles.length - 1; i >= 0 && out.length < limit; i--) {
      const file = this.#indexFiles[i];
      if (file.isTimeMatched(begin, end)) file.selectPhyOffsets(out, keyHash, limit, begin, end);
      // Older files end no later than this one begins.
      if (file.header.indexCount > 1 && file.header.beginTimestamp < begin) break;
    }
    return out;
  }

  /** Issues the writes of flush() without waiting for them to be durable. */
  writeDirty(): void {
    for (const file of this.#indexFiles) file.writeDirty();
  }

  /**
   * Writes and fdatasyncs sealed files, then the active one's entries and header (its slot
   * table too with `slotPages`, as close() does); fsyncs a new file's name. A start rebuilds
   * the active file's slot table from its entries (recoverAfterCrash()).
   */
  async flush(slotPages = false): Promise<void> {
    this.#checkWritable();
    for (const file of this.#indexFiles) file.writeDirty(slotPages);
    try {
      await this.#nameDurable;
      for (const file of [...this.#indexFiles]) await file.sync();
    } catch (cause) {
      this.#failure = cause;
      this.#checkWritable();
    }
  }

  /**
   * After an unclean stop, before any put: files from the newest back keep only their
   * entries below `dispatchSafeOffset`, an offset below which every record was put before a
   * flush() that completed (so those entries and a header counting them are durable). Files
   * left empty are deleted, except the last survivor. Then flushes; the caller re-dispatches
   * from `dispatchSafeOffset` (or lower: indexed records are skipped).
   */
  async recoverAfterCrash(dispatchSafeOffset: number): Promise<void> {
    assert(this.#loaded, "IndexService.load() before recoverAfterCrash()");
    if (!Number.isSafeInteger(dispatchSafeOffset) || dispatchSafeOffset < 0) {
      throw new IndexError(
        "INDEX_QUERY_ILLEGAL",
        `Cannot recover the index to dispatchSafeOffset ${dispatchSafeOffset}`,
      );
    }
    let removed = false;
    while (this.#indexFiles.length > 0) {
      const file = this.#indexFiles[this.#indexFiles.length - 1];
      const kept = file.recover(dispatchSafeOffset);
      if (kept > 0 || this.#indexFiles.length === 1) break;
      this.#indexFiles.pop();
      file.close();
      this.#files.remove(file.path);
      removed = true;
    }
    if (removed) this.#syncDirSoon();
    await this.flush();
  }

  /** Deletes files whose endPhyOffset < minPhyOffset, oldest first, never the last one. */
  async deleteFilesBelow(minPhyOffset: number): Promise<number> {
    assert(this.#loaded, "IndexService.load() before deleteFilesBelow()");
    let deleted = 0;
    while (this.#indexFiles.length > 1 && this.#indexFiles[0].endPhyOffset < minPhyOffset) {
      const file = this.#indexFiles.shift()!;
      file.close();
      this.#files.remove(file.path);
      deleted++;
    }
    if (deleted > 0) await this.#files.syncDir(this.dir);
    return deleted;
  }

  /** Flushes, then closes every file, even when the flush fails. */
  async close(): Promise<void> {
    try {
      if (this.#failure === undefined) await this.flush(true);
    } finally {
      for (const file of this.#indexFiles) file.close();
      this.#indexFiles = [];
      this.#loaded = false;
    }
  }

  #putKey(keyHash: number, req: DispatchRequest): void {
    let file = this.#indexFiles.at(-1);
    if (file === undefined || file.isFull) file = this.#roll(file);
    file.putKeyHash(keyHash, req);
  }

  /**
   * A new file begins where the previous one ended. The previous one is sealed and written
   * now, which frees its slot table; the next flush() makes it durable.
   */
  #roll(previous: IndexFile | undefined): IndexFile {
    previous?.seal();
    previous?.writeDirty();
    const path = joinPath(this.dir, this.#nextName(previous));
    const begin = {
      phyOffset: previous?.endPhyOffset ?? 0,
      timestamp: previous?.header.endTimestamp ?? 0,
    };
    const file = IndexFile.create(this.#files, path, this.layout, begin);
    this.#indexFiles.push(file);
    this.#syncDirSoon();
    return file;
  }

  /** Starts a folder fsync that the next flush() awaits, with any still unawaited. */
  #syncDirSoon(): void {
    this.#nameDurable = Promise.all([this.#nameDurable, this.#files.syncDir(this.dir)])
      .then(() => {});
    // Awaited by the next flush; this keeps a failure from going unhandled meanwhile.
    this.#nameDurable.catch(() => {});
  }

  /** The clock's name, or one past the newest name if that does not sort after it. */
  #nextName(previous: IndexFile | undefined): string {
    const name = indexFileName(this.#nowMs());
    if (previous === undefined) return name;
    const last = previous.path.slice(previous.path.lastIndexOf("/") + 1);
    if (name > last) return name;
    return (BigInt(last) + 1n).toString().padStart(last.length, "0");
  }

  #checkWritable(): void {
    if (this.#failure === undefined) return;
    throw new StoreError(
      "STORE_NOT_WRITABLE",
      "Cannot write the index as an earlier fdatasync of it failed",
      { cause: this.#failure },
    );
  }
}
