// The CommitLog: every message of every topic, appended in arrival order to fixed-size
// segments (reference/rocketmq.md §1). One writer: JavaScript runs one put at a time,
// which stands in for RocketMQ's put lock. Appends made in the same tick are gathered
// and written with one writeSync (a syscall costs far more than copying a record).
import type { FilePort } from "../file_port.ts";
import { isNoSpace, readFullyInto } from "../file_port.ts";
import { assert } from "../errors.ts";
import {
  BLANK_MAGIC,
  encodeRecord,
  END_FILE_MIN_BLANK_BYTES,
  type PreparedRecord,
  stampRecord,
} from "../message/record.ts";
import { parseRecord, type ParseResult } from "../message/record_decode.ts";
import { parseSegmentName, Segment } from "./segment.ts";
import { loadSegments } from "./segment_load.ts";
import { PREALLOC_SUFFIX, type RoomRule, SegmentPreparation } from "./preallocate.ts";
import { TailCache } from "./tail_cache.ts";
import { WriteBuffer } from "./write_buffer.ts";

export interface AppendPosition {
  physicalOffset: number;
  size: number;
}

export interface CommitLogOptions {
  files: FilePort;
  dir: string;
  segmentBytes: number;
  writeBatchBytesMax: number;
  zeroFill: boolean;
  /** Newest written bytes held in memory for reads (StoreConfig.commitLogTailCacheBytes). */
  tailCacheBytes: number;
  /** When the disk has room to zero-fill the next segment (unset: always). */
  prealloc?: RoomRule;
}

export class CommitLog {
  readonly #files: FilePort;
  readonly #dir: string;
  readonly #segmentBytes: number;
  readonly #writeBatchBytesMax: number;
  readonly #zeroFill: boolean;
  readonly #prealloc: RoomRule | undefined;
  #segments: Segment[] = [];
  /** The next segment, being zero-filled in the background. */
  #next: SegmentPreparation | undefined;
  /** Bytes handed to the kernel: readers may see everything below. */
  #wroteOffset = 0;
  /** Next record's offset, counting records gathered but not yet written. */
  #appendOffset = 0;
  /**
   * This tick's appends, [0, #pendingBytes): records are encoded straight into it and it is
   * written with one writeAt, then reused (the file port copies before returning). Grown as
   * ticks need, up to writeBatchBytesMax (write_buffer.ts).
   */
  readonly #out: WriteBuffer;
  /** A record or replicated chunk larger than the buffer, pending on its own. */
  #pendingLarge: Uint8Array | undefined;
  #pendingBytes = 0;
  #pendingStart = 0;
  #pendingSegment: Segment | undefined;
  #onWritten: (wroteOffset: number) => void = () => {};
  /** What reads at the tail are served from (tail_cache.ts). */
  readonly #tail: TailCache;

  constructor(options: CommitLogOptions) {
    this.#files = options.files;
    this.#dir = options.dir;
    this.#segmentBytes = options.segmentBytes;
    this.#writeBatchBytesMax = options.writeBatchBytesMax;
    this.#out = new WriteBuffer(options.writeBatchBytesMax);
    this.#zeroFill = options.zeroFill;
    this.#prealloc = options.prealloc;
    this.#tail = new TailCache(options.tailCacheBytes);
    assert(this.#segmentBytes >= 4096, "segment too small");
  }

  get segmentBytes(): number {
    return this.#segmentBytes;
  }
  get wroteOffset(): number {
    return this.#wroteOffset;
  }
  get minOffset(): number {
    return this.#segments.length ? this.#segments[0].startOffset : this.#wroteOffset;
  }
  get segments(): readonly Segment[] {
    return this.#segments;
  }
  get dir(): string {
    return this.#dir;
  }

  /** Resolves when the background preparation of the next segment has ended (tests). */
  get nextSegmentSettled(): Promise<void> {
    return this.#next?.done ?? Promise.resolve();
  }

  /** Called after each batch reaches the kernel, with the new written offset. */
  onWritten(listener: (wroteOffset: number) => void) {
    this.#onWritten = listener;
  }

  /** Opens existing segments; recovery then decides where the data ends (setEnd). */
  load(): void {
    this.#files.mkdirp(this.#dir);
    for (const name of this.#files.list(this.#dir)) {
      if (name.endsWith(PREALLOC_SUFFIX)) this.#files.remove(`${this.#dir}/${name}`);
    }
    this.#segments = loadSegments(this.#files, this.#dir, this.#segmentBytes);
    const first = this.#segments[0]?.startOffset ?? 0;
    this.#wroteOffset = this.#appendOffset = first;
    this.#tail.reset(first);
  }

  /** Sets the end of valid data (after recovery) and drops segments wholly beyond it. */
  setEnd(offset: number): void {
    assert(this.#pendingBytes === 0, "setEnd with pending writes");
    while (this.#segments.length && this.#segments.at(-1)!.startOffset > offset) {
      const seg = this.#segments.pop()!;
      seg.close();
      this.#files.remove(seg.file.path);
    }
    if (this.#segments.length && this.#segments.at(-1)!.startOffset === offset && offset > 0) {
      // An empty last segment carries nothing; drop it as RocketMQ does on load.
      const seg = this.#segments.pop()!;
      seg.close();
      this.#files.remove(seg.file.path);
    }
    this.#wroteOffset = this.#appendOffset = offset;
    this.#tail.reset(offset);
  }

  /**
   * Places a prepared record at the end of the log: assigns its physical offset, rolls to
   * a new segment (BLANK marker) when it does not fit, stamps it and queues it for the
   * write at the end of this tick (or now, past writeBatchBytesMax).
   */
  append(record: PreparedRecord, queueOffset: number, storeTimestamp: number): AppendPosition {
    const size = record.size;
    let segment = this.#segmentFor(this.#appendOffset);
    if (this.#appendOffset + size + END_FILE_MIN_BLANK_BYTES > segment.endOffset) {
      this.#appendBlank(segment);
      segment = this.#segmentFor(this.#appendOffset);
    }
    assert(
      this.#appendOffset + size + END_FILE_MIN_BLANK_BYTES <= segment.endOffset,
      "record larger than a segment",
    );
    const physicalOffset = this.#appendOffset;
    if (size > this.#writeBatchBytesMax) {
      const bytes = record.bytes;
      stampRecord(new DataView(bytes.buffer), 0, queueOffset, physicalOffset, storeTimestamp);
      this.#queue(segment, bytes);
    } else {
      const at = this.#reserve(segment, size);
      encodeRecord(record, this.#out.bytes, this.#out.view, at);
      stampRecord(this.#out.view, at, queueOffset, physicalOffset, storeTimestamp);
    }
    return { physicalOffset, size };
  }

  /** Writes what this tick gathered with one write, then tells the listener. */
  writePending(): void {
    if (this.#pendingBytes === 0) return;
    const segment = this.#pendingSegment!;
    const bytes = this.#pendingLarge ?? this.#out.bytes.subarray(0, this.#pendingBytes);
    const position = this.#pendingStart - segment.startOffset;
    try {
      segment.file.writeAt(bytes, position);
    } catch (err) {
      // The disk is full: a segment being zero-filled gives its space back first, and the
      // write is tried once more (over what part of it landed). Without one, it fails.
      if (!isNoSpace(err) || !this.#next) throw err;
      this.releaseNext();
      segment.file.writeAt(bytes, position);
    }
    this.#tail.append(this.#pendingStart, bytes);
    // A BLANK closes its segment (RocketMQ counts the file as full): the log continues at the
    // next segment's start, so that is the written end a flush, a reader and a replica see.
    this.#wroteOffset = this.#appendOffset === segment.endOffset
      ? segment.endOffset
      : this.#pendingStart + this.#pendingBytes;
    this.#pendingLarge = undefined;
    this.#pendingBytes = 0;
    this.#pendingSegment = undefined;
    this.#onWritten(this.#wroteOffset);
  }

  get hasPending(): boolean {
    return this.#pendingBytes > 0;
  }

  /**
   * A write failed: what was gathered and not written is dropped, and the next record goes
   * where the written log ends. The caller refuses the puts whose records these were.
   */
  discardPending(): void {
    this.#pendingLarge = undefined;
    this.#pendingBytes = 0;
    this.#pendingSegment = undefined;
    this.#appendOffset = this.#wroteOffset;
  }

  /** Stops zero-filling the next segment and gives its space back (a write found the disk full). */
  releaseNext(): void {
    this.#next?.release();
    this.#next = undefined;
  }

  /**
   * Appends bytes copied from another replica's log at the current end: whole records and,
   * when `closesSegment`, a BLANK that ends the segment. The caller has verified them
   * (replica_io.ts); their PHYSICALOFFSET fields already name where they land.
   */
  appendVerified(bytes: Uint8Array, closesSegment: boolean): void {
    const segment = this.#segmentFor(this.#appendOffset);
    assert(
      this.#appendOffset + bytes.length <= segment.endOffset,
      "replicated bytes cross a segment",
    );
    this.#queue(segment, bytes);
    if (closesSegment) {
      this.#appendOffset = segment.endOffset;
      this.writePending();
    }
  }

  /**
   * Drops everything at and after `offset`, a record boundary: later segments go (their
   * removal made durable first), and the segment holding `offset` is cut there and grown
   * back with zeros, so no stale record (which would carry a valid CRC and its own offset)
   * can follow a later append. The caller guards the window with a truncation marker
   * (storage/ha/truncate_marker.ts): a crash halfway is finished by recovery.
   */
  async truncateTo(offset: number): Promise<void> {
    assert(this.#pendingBytes === 0, "truncateTo with pending writes");
    const next = this.#next;
    this.#next = undefined;
    next?.cancel();
    await next?.done;
    next?.take()?.close();
    let removed = false;
    while (this.#segments.length && this.#segments.at(-1)!.startOffset >= offset) {
      const seg = this.#segments.pop()!;
      seg.close();
      this.#files.remove(seg.file.path);
      removed = true;
    }
    for (const name of this.#files.list(this.#dir)) {
      // A preparation that finished meanwhile renamed itself to a segment name beyond the end.
      const start = parseSegmentName(name);
      if (start !== undefined && start >= offset) {
        this.#files.remove(`${this.#dir}/${name}`);
        removed = true;
      }
    }
    if (removed) await this.#files.syncDir(this.#dir);
    const last = this.#segments.at(-1);
    if (last && last.contains(offset)) {
      last.file.truncate(offset - last.startOffset);
      last.file.truncate(last.sizeBytes);
      await last.file.datasync();
    }
    this.#wroteOffset = this.#appendOffset = offset;
    this.#tail.reset(offset);
  }

  /** Segments holding bytes in [from, to), oldest first. */
  segmentsBetween(from: number, to: number): Segment[] {
    return this.#segments.filter((s) => s.endOffset > from && s.startOffset < to);
  }

  findSegment(offset: number): Segment | undefined {
    if (!this.#segments.length) return undefined;
    const index = Math.floor((offset - this.#segments[0].startOffset) / this.#segmentBytes);
    const segment = this.#segments[index];
    return segment?.contains(offset) ? segment : undefined;
  }

  /** Reads `size` bytes at `offset`; undefined if not (or no longer) in the log. */
  read(offset: number, size: number): Uint8Array | undefined {
    if (offset + size > this.#wroteOffset) return undefined;
    const out = new Uint8Array(size);
    return this.#tail.readInto(offset, out) || this.#readFileInto(offset, out) ? out : undefined;
  }

  /**
   * Reads and parses the record at `offset`, into `into` (exactly `size` bytes, a slice of
   * a caller's arena: one allocation for a page of records) or a new buffer. Bytes from the
   * disk are CRC-checked; bytes from the tail cache never left this process's memory, so
   * their CRC is not computed again. The record's fields view the bytes read.
   */
  readRecord(offset: number, size: number, into?: Uint8Array): ParseResult {
    if (offset + size > this.#wroteOffset) {
      return { kind: "corrupt", reason: "offset outside the log" };
    }
    const bytes = into ?? new Uint8Array(size);
    assert(bytes.length === size, "readRecord into a buffer of the record's size");
    const cached = this.#tail.readInto(offset, bytes);
    if (!cached && !this.#readFileInto(offset, bytes)) {
      return { kind: "corrupt", reason: "offset outside the log" };
    }
    return parseRecord(bytes, 0, { checkCrc: !cached, expectedPhysicalOffset: offset });
  }

  #readFileInto(offset: number, out: Uint8Array): boolean {
    const segment = this.findSegment(offset);
    if (!segment || offset + out.length > segment.endOffset) return false;
    return readFullyInto(segment.file, offset - segment.startOffset, out) === out.length;
  }

  /** Deletes the oldest segment (retention). Never the one being written. */
  removeOldest(): Segment | undefined {
    if (this.#segments.length <= 1) return undefined;
    const seg = this.#segments.shift()!;
    seg.close();
    this.#files.remove(seg.file.path);
    return seg;
  }

  async close(): Promise<void> {
    this.writePending();
    this.#next?.cancel();
    await this.#next?.done;
    this.#next?.take()?.close();
    for (const s of this.#segments) s.close();
    this.#segments = [];
    this.#next = undefined;
  }

  #appendBlank(segment: Segment) {
    const remaining = segment.endOffset - this.#appendOffset;
    const blank = new Uint8Array(END_FILE_MIN_BLANK_BYTES);
    const view = new DataView(blank.buffer);
    view.setInt32(0, remaining);
    view.setInt32(4, BLANK_MAGIC);
    this.#queue(segment, blank);
    this.#appendOffset = segment.endOffset;
    this.writePending();
  }

  /** Copies `bytes` into the write buffer (or keeps them, when larger than it). */
  #queue(segment: Segment, bytes: Uint8Array) {
    const at = this.#reserve(segment, bytes.length);
    if (bytes.length > this.#writeBatchBytesMax) this.#pendingLarge = bytes;
    else this.#out.bytes.set(bytes, at);
  }

  /**
   * Makes room for `size` bytes of `segment` after what is pending (writing that first when
   * it is of another segment or the room is short) and returns where they go in the buffer.
   */
  #reserve(segment: Segment, size: number): number {
    if (
      this.#pendingBytes > 0 &&
      (this.#pendingSegment !== segment || this.#pendingBytes + size > this.#writeBatchBytesMax)
    ) {
      this.writePending();
    }
    if (this.#pendingBytes === 0) {
      this.#pendingStart = this.#appendOffset;
      this.#pendingSegment = segment;
    }
    const at = this.#pendingBytes;
    if (size <= this.#writeBatchBytesMax) this.#out.ensure(at + size, at);
    this.#pendingBytes += size;
    this.#appendOffset += size;
    return at;
  }

  #segmentFor(offset: number): Segment {
    const last = this.#segments.at(-1);
    if (last && last.contains(offset)) return last;
    const start = last ? last.endOffset : offset - (offset % this.#segmentBytes);
    const prepared = this.#next?.startOffset === start ? this.#next.take() : undefined;
    this.#next?.cancel();
    this.#next = undefined;
    const segment = prepared ?? Segment.create(this.#files, this.#dir, start, this.#segmentBytes);
    this.#segments.push(segment);
    if (this.#zeroFill) {
      this.#next = new SegmentPreparation(
        this.#files,
        this.#dir,
        segment.endOffset,
        this.#segmentBytes,
        this.#prealloc,
      );
    }
    return segment;
  }
}
