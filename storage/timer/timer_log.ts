// The timer log (RocketMQ's timerlog): fixed 56-byte records appended to segments named
// by their first global position (20 digits, as CommitLog segments). A segment holds
// floor(segmentBytes / 56) records and its tail is unused, so record k of the segment at
// `start` is at `start + 56k` and no BLANK record is needed. Segments grow as written (no
// preallocation): the timer log is small next to the CommitLog. Appends of one tick go
// to the kernel in one write (the batch below); flush() makes them durable.
import type { FileHandle, FilePort } from "../file_port.ts";
import { joinPath } from "../file_port.ts";
import { assert } from "../errors.ts";
import { parseSegmentName, segmentName } from "../commit_log/segment.ts";
import { TimerError } from "./timer_config.ts";
import {
  decodeRecord,
  emptyRecord,
  encodeRecord,
  TIMER_RECORD_BYTES,
  type TimerRecord,
} from "./timer_record.ts";

/** Records gathered before a write is issued within a tick: 1024 x 56 = 56 KiB. */
const BATCH_RECORDS = 1024;
/** Records per cached read block (3.5 KiB: a read costs about the same as one of 56 bytes).
 * A slot's records, added together, sit together; a roll's copies are contiguous. */
const CACHE_RECORDS = 64;
const BLOCK_BYTES = CACHE_RECORDS * TIMER_RECORD_BYTES;
/** Direct-mapped read cache: 64 blocks, 224 KiB, whatever the number of timers. */
const CACHE_BLOCKS = 64;
/** Records per read while scanning at open (56 KiB). */
const SCAN_RECORDS = 1024;

interface LogSegment {
  start: number;
  file: FileHandle;
  /** Latest `retireMs` of its records: once readTime has passed it, none is needed. */
  retireMsMax: number;
  /** Written since the last flush. */
  dirty: boolean;
}

export interface TimerLogOptions {
  files: FilePort;
  dir: string;
  segmentBytes: number;
  /** The readTime from which a record is no longer needed (the store knows the wheels). */
  retireMs: (record: TimerRecord) => number;
}

export class TimerLog {
  readonly #files: FilePort;
  readonly #dir: string;
  readonly #segmentBytes: number;
  readonly #retireMs: (record: TimerRecord) => number;
  readonly recordsPerSegment: number;
  /** By start, in increasing order (a Map keeps insertion order; we insert in order). */
  #segments = new Map<number, LogSegment>();
  #appendPos = 0;
  // The batch and the read cache are allocated on first use: Bun makes every byte of a new
  // buffer resident, and a broker without timers needs neither (bench/README.md, "Round 6 … idle RSS").
  #batch = new Uint8Array(0);
  #batchView = new DataView(this.#batch.buffer);
  #batchCount = 0;
  #batchStart = 0;
  #namesDirty = false;
  #cache = new Uint8Array(0);
  #cacheView = new DataView(this.#cache.buffer);
  /** Log position of the block held in each cache slot, -1 if none. */
  #cacheBlock = new Float64Array(CACHE_BLOCKS).fill(-1);
  /** Bytes of it read (records are immutable once written: a block read short is re-read
   * when a later record is wanted). */
  #cacheBytes = new Int32Array(CACHE_BLOCKS);

  constructor(options: TimerLogOptions) {
    this.#files = options.files;
    this.#dir = options.dir;
    this.#segmentBytes = options.segmentBytes;
    this.#retireMs = options.retireMs;
    this.recordsPerSegment = Math.floor(options.segmentBytes / TIMER_RECORD_BYTES);
    assert(this.recordsPerSegment >= 1, "timer log segment smaller than a record");
  }

  /** Position of the next record. */
  get appendPos(): number {
    return this.#appendPos;
  }
  get segmentCount(): number {
    return this.#segments.size;
  }
  /** Start of the segment holding `pos` (or starting there). */
  segmentStartOf(pos: number): number {
    return Math.floor(pos / this.#segmentBytes) * this.#segmentBytes;
  }
  /** Buffers and per-segment bookkeeping (about 64 bytes a segment). */
  memoryBytes(): number {
    const cache = this.#cache.byteLength + this.#cacheBlock.byteLength +
      this.#cacheBytes.byteLength;
    return this.#batch.byteLength + cache + 64 * this.#segments.size;
  }

  /** Opens the segment files found in the folder; scan() then decides where the log ends. */
  load(): void {
    this.#files.mkdirp(this.#dir);
    for (const name of this.#files.list(this.#dir)) {
      const start = parseSegmentName(name);
      if (start === undefined || start % this.#segmentBytes !== 0) continue;
      const file = this.#files.open(joinPath(this.#dir, name));
      this.#segments.set(start, { start, file, retireMsMax: -Infinity, dirty: false });
    }
  }

  /**
   * Reads every record in order, calling `visit` until it returns false, and returns where
   * the log ends: at the first torn or zero record, at a missing segment, or where `visit`
   * stopped. Gaps between segments below `contiguousFrom` are deleted segments; at or above
   * it (segments created after the last checkpoint), a gap is a name lost in a crash.
   * `onGap` is told when the scan passes deleted segments.
   */
  scan(
    contiguousFrom: number,
    visit: (pos: number, record: TimerRecord) => boolean,
    onGap: () => void,
  ): number {
    const bytes = new Uint8Array(SCAN_RECORDS * TIMER_RECORD_BYTES);
    const view = new DataView(bytes.buffer);
    const record = emptyRecord();
    let next = -1; // where the previous (full) segment's successor would start
    for (const segment of this.#segments.values()) {
      if (segment.start > contiguousFrom && segment.start !== next) {
        return Math.max(next, contiguousFrom);
      }
      if (next !== -1 && segment.start !== next) onGap();
      segment.retireMsMax = -Infinity;
      for (let k = 0; k < this.recordsPerSegment; k += SCAN_RECORDS) {
        const count = Math.min(SCAN_RECORDS, this.recordsPerSegment - k);
        readUpTo(segment.file, bytes, count * TIMER_RECORD_BYTES, k * TIMER_RECORD_BYTES);
        for (let i = 0; i < count; i++) {
          const pos = segment.start + (k + i) * TIMER_RECORD_BYTES;
          const at = i * TIMER_RECORD_BYTES;
          if (!decodeRecord(bytes, view, at, record) || !visit(pos, record)) {
            return pos;
          }
          segment.retireMsMax = Math.max(segment.retireMsMax, this.#retireMs(record));
        }
      }
      next = segment.start + this.#segmentBytes;
    }
    return next === -1 ? contiguousFrom : Math.max(next, contiguousFrom);
  }

  /** Makes `pos` the end of the log: truncates its segment, removes those after it; the
   * next flush() makes the cut durable. */
  setEnd(pos: number): void {
    assert(this.#batchCount === 0, "setEnd with pending records");
    for (const segment of [...this.#segments.values()]) {
      if (segment.start + this.#segmentBytes <= pos) continue;
      if (segment.start >= pos) {
        segment.file.close();
        this.#files.remove(segment.file.path);
        this.#segments.delete(segment.start);
      } else if (segment.file.size() > pos - segment.start) {
        segment.file.truncate(pos - segment.start);
        segment.dirty = true;
      }
    }
    this.#namesDirty = true;
    this.#cacheBlock.fill(-1);
    this.#appendPos = pos;
  }

  /** Appends a record (CRC added here) and returns its position. */
  append(record: TimerRecord): number {
    const pos = this.#appendPos;
    const segment = this.#segments.get(this.segmentStartOf(pos)) ?? this.#createSegment(pos);
    if (this.#batchCount === BATCH_RECORDS) this.writePending();
    if (this.#batchCount > 0 && this.segmentStartOf(this.#batchStart) !== segment.start) {
      this.writePending();
    }
    if (this.#batchCount === 0) this.#batchStart = pos;
    if (this.#batch.length === 0) {
      this.#batch = new Uint8Array(BATCH_RECORDS * TIMER_RECORD_BYTES);
      this.#batchView = new DataView(this.#batch.buffer);
    }
    encodeRecord(this.#batch, this.#batchView, this.#batchCount * TIMER_RECORD_BYTES, record);
    this.#batchCount++;
    segment.retireMsMax = Math.max(segment.retireMsMax, this.#retireMs(record));
    const k = (pos - segment.start) / TIMER_RECORD_BYTES + 1;
    this.#appendPos = k === this.recordsPerSegment
      ? segment.start + this.#segmentBytes
      : pos + TIMER_RECORD_BYTES;
    return pos;
  }

  /** Hands the gathered records to the kernel with one write. */
  writePending(): void {
    if (this.#batchCount === 0) return;
    const segment = this.#segments.get(this.segmentStartOf(this.#batchStart))!;
    const bytes = this.#batch.subarray(0, this.#batchCount * TIMER_RECORD_BYTES);
    segment.file.writeAt(bytes, this.#batchStart - segment.start);
    segment.dirty = true;
    this.#batchCount = 0;
  }

  /** Reads the record at `pos` into `out`; it must be one this log appended or scanned. */
  read(pos: number, out: TimerRecord): void {
    assert(pos >= 0 && pos < this.#appendPos, "timer log read beyond its end");
    if (this.#batchCount > 0 && pos >= this.#batchStart) this.writePending();
    const segment = this.#segments.get(this.segmentStartOf(pos));
    assert(segment !== undefined, "timer log read in a deleted segment");
    const k = (pos - segment.start) / TIMER_RECORD_BYTES;
    const block = segment.start + (k - k % CACHE_RECORDS) * TIMER_RECORD_BYTES;
    const i = Math.floor(block / BLOCK_BYTES) % CACHE_BLOCKS;
    if (this.#cache.length === 0) {
      this.#cache = new Uint8Array(CACHE_BLOCKS * BLOCK_BYTES);
      this.#cacheView = new DataView(this.#cache.buffer);
    }
    if (this.#cacheBlock[i] !== block || pos + TIMER_RECORD_BYTES > block + this.#cacheBytes[i]) {
      const into = this.#cache.subarray(i * BLOCK_BYTES, (i + 1) * BLOCK_BYTES);
      this.#cacheBytes[i] = readUpTo(segment.file, into, BLOCK_BYTES, block - segment.start);
      this.#cacheBlock[i] = block;
    }
    if (!decodeRecord(this.#cache, this.#cacheView, i * BLOCK_BYTES + pos - block, out)) {
      this.#cacheBlock[i] = -1;
      throw new TimerError(
        "TIMER_LOG_CORRUPT",
        `Cannot read timer-log record at ${pos} as its size, magic or CRC is wrong`,
      );
    }
  }

  /** Writes what is gathered, fdatasyncs the segments written since the last flush and
   * fsyncs the folder if a segment was created or removed; returns the durable end. */
  async flush(): Promise<number> {
    this.writePending();
    const end = this.#appendPos;
    const dirty = [...this.#segments.values()].filter((s) => s.dirty);
    for (const segment of dirty) segment.dirty = false;
    const names = this.#namesDirty;
    this.#namesDirty = false;
    await Promise.all(dirty.map((s) => s.file.datasync()));
    if (names) await this.#files.syncDir(this.#dir);
    return end;
  }

  /**
   * Removes segments that lie wholly below `belowPos` and whose records all retire by
   * `readTimeMs`, never the one being appended to. Removals need no fsync: a segment that
   * comes back after a crash holds only retired records, which recovery skips.
   */
  deleteSegmentsRetiredBy(readTimeMs: number, belowPos: number): number {
    const limit = Math.min(belowPos, this.segmentStartOf(this.#appendPos));
    let removed = 0;
    for (const segment of [...this.#segments.values()]) {
      if (segment.start + this.#segmentBytes > limit) break;
      if (segment.retireMsMax > readTimeMs) continue;
      segment.file.close();
      this.#files.remove(segment.file.path);
      this.#segments.delete(segment.start);
      this.#cacheBlock.fill(-1);
      removed++;
    }
    return removed;
  }

  close(): void {
    for (const segment of this.#segments.values()) segment.file.close();
    this.#segments.clear();
  }

  #createSegment(start: number): LogSegment {
    assert(start % this.#segmentBytes === 0, "timer log segment start not aligned");
    const path = joinPath(this.#dir, segmentName(start));
    const file = this.#files.open(path, { create: true });
    file.truncate(0);
    const segment = { start, file, retireMsMax: -Infinity, dirty: true };
    this.#segments.set(start, segment);
    this.#namesDirty = true;
    return segment;
  }
}

/** Reads up to `length` bytes at `position`, fewer only at the end of the file. */
function readUpTo(file: FileHandle, into: Uint8Array, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const n = file.readAt(into, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  into.fill(0, done, length);
  return done;
}
