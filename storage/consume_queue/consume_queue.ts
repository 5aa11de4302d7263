// One ConsumeQueue: the index of one (topic, queueId) into the CommitLog
// (reference/rocketmq.md §2). Entry N is message N of the queue, so a pull seeks by
// multiplication (queueOffset * CQ_UNIT_BYTES). Unit layout, big-endian:
//   long commitLogOffset | int size | long tagsCode
// Files hold `unitsPerFile` units and are named by their first byte offset
// (queueOffset * 20, 20 digits). A queue that starts mid-file is padded in front with
// (0, Integer.MAX_VALUE, 0) units, as RocketMQ does. A unit whose size is 0 marks the end.
import type { FileHandle, FilePort } from "../file_port.ts";
import { joinPath, readFully } from "../file_port.ts";
import { assert } from "../errors.ts";
import { getLong, setLong } from "../message/record.ts";

export const CQ_UNIT_BYTES = 20; // CQ_STORE_UNIT_SIZE
const PAD_SIZE = 0x7fffffff; // Integer.MAX_VALUE in a padding unit
/** Units kept in memory before a write (64 KiB of units). */
const PENDING_UNITS_MAX = 3276;

export interface CqUnit {
  queueOffset: number;
  commitLogOffset: number;
  size: number;
  tagsCode: number;
}

interface CqFile {
  firstUnit: number;
  handle: FileHandle;
}

export class ConsumeQueue {
  #files: CqFile[] = [];
  #minOffset = 0;
  #maxOffset = 0;
  #maxPhysicOffset = 0;
  #pending: number[] = []; // flat triples: commitLogOffset, size, tagsCode
  #pendingFirst = 0;
  #dirty = new Set<CqFile>();
  #newNames = false;
  /** Since the last sync: first unit's CommitLog offset, units, skips (datasyncAll). */
  unsyncedFrom = Infinity;
  unsyncedUnits = 0;
  skippedSyncs = 0;
  readonly dir: string;

  constructor(
    private readonly files: FilePort,
    rootDir: string,
    readonly topic: string,
    readonly queueId: number,
    private readonly unitsPerFile: number,
  ) {
    this.dir = joinPath(rootDir, topic, String(queueId));
  }

  get minOffset(): number {
    return this.#minOffset;
  }
  /** The next queue offset to be written (entry count). */
  get maxOffset(): number {
    return this.#maxOffset;
  }
  /** End (offset + size) of the last record this queue points at. */
  get maxPhysicOffset(): number {
    return this.#maxPhysicOffset;
  }

  /** Opens existing files and finds the first empty unit after the last written one. */
  load(): void {
    for (const name of this.files.list(this.dir)) {
      if (!/^\d{20}$/.test(name)) continue;
      const byteOffset = Number(name);
      assert(byteOffset % CQ_UNIT_BYTES === 0, "ConsumeQueue file name not unit aligned");
      this.#files.push({
        firstUnit: byteOffset / CQ_UNIT_BYTES,
        handle: this.files.open(joinPath(this.dir, name)),
      });
    }
    if (!this.#files.length) return;
    // Files after a gap (a lost file name) hold units that can no longer be reached.
    const gap = this.#files.findIndex((f, i) =>
      i > 0 && f.firstUnit !== this.#files[i - 1].firstUnit + this.unitsPerFile
    );
    if (gap > 0) { for (const f of this.#files.splice(gap)) this.#removeFile(f); }
    this.#minOffset = this.#files[0].firstUnit;
    // The last file with a written unit holds the end; empty trailing files are dropped.
    while (this.#files.length > 1 && this.#countWritten(this.#files.at(-1)!) === 0) {
      this.#removeFile(this.#files.pop()!);
    }
    const last = this.#files.at(-1)!;
    this.#maxOffset = last.firstUnit + this.#countWritten(last);
    this.#skipPadding();
    const tail = this.#maxOffset > this.#minOffset ? this.get(this.#maxOffset - 1) : undefined;
    this.#maxPhysicOffset = tail ? tail.commitLogOffset + tail.size : 0;
  }

  /** Units before the first zero-size unit, read in chunks so only written data is read. */
  #countWritten(file: CqFile): number {
    const chunk = 4096;
    for (let at = 0; at < this.unitsPerFile; at += chunk) {
      const units = this.#readUnits(file, at, Math.min(chunk, this.unitsPerFile - at));
      const end = units.findIndex((u) => u.size === 0);
      if (end >= 0) return at + end;
      if (units.length === 0) return at;
    }
    return this.unitsPerFile;
  }

  /**
   * Adds the unit for message `queueOffset`. A unit the queue already has is skipped, so
   * re-dispatching after a crash is harmless.
   */
  put(queueOffset: number, commitLogOffset: number, size: number, tagsCode: number): void {
    if (commitLogOffset + size <= this.#maxPhysicOffset) return;
    if (queueOffset !== this.#maxOffset) {
      if (this.#maxOffset !== this.#minOffset) {
        assert(queueOffset < this.#maxOffset, "ConsumeQueue gap in a non-empty queue");
        return;
      }
      // An empty queue takes its start from the first message it gets (after retention, or
      // after a crash lost the files it had).
      this.#flushWrites();
      for (const f of this.#files.splice(0)) this.#removeFile(f);
      this.#minOffset = this.#maxOffset = queueOffset;
      this.#padFront(queueOffset);
    }
    if (this.#pending.length === 0) this.#pendingFirst = queueOffset;
    this.#pending.push(commitLogOffset, size, tagsCode);
    if (this.unsyncedUnits++ === 0) this.unsyncedFrom = commitLogOffset;
    this.#maxOffset = queueOffset + 1;
    this.#maxPhysicOffset = commitLogOffset + size;
    if (this.#pending.length >= PENDING_UNITS_MAX * 3) this.#flushWrites();
  }

  /** The unit of message `queueOffset`, or undefined outside [min, max). */
  get(queueOffset: number): CqUnit | undefined {
    if (queueOffset < this.#minOffset || queueOffset >= this.#maxOffset) return undefined;
    return this.range(queueOffset, 1)[0];
  }

  /**
   * Up to `count` units from `queueOffset`, within one file (as RocketMQ reads one CQ file
   * per pull). Units not yet written are served from memory.
   */
  range(queueOffset: number, count: number): CqUnit[] {
    if (queueOffset < this.#minOffset || queueOffset >= this.#maxOffset) return [];
    const end = Math.min(
      queueOffset + count,
      this.#maxOffset,
      queueOffset - (queueOffset % this.unitsPerFile) + this.unitsPerFile,
    );
    const pendingFirst = this.#pending.length ? this.#pendingFirst : this.#maxOffset;
    const out: CqUnit[] = [];
    if (queueOffset < pendingFirst) {
      const file = this.#fileOf(queueOffset);
      if (!file) return [];
      out.push(
        ...this.#readUnits(
          file,
          queueOffset - file.firstUnit,
          Math.min(end, pendingFirst) - queueOffset,
        ),
      );
    }
    for (let q = Math.max(queueOffset, pendingFirst); q < end; q++) {
      const p = (q - this.#pendingFirst) * 3;
      out.push({
        queueOffset: q,
        commitLogOffset: this.#pending[p],
        size: this.#pending[p + 1],
        tagsCode: this.#pending[p + 2],
      });
    }
    return out;
  }

  /** Writes units gathered so far. Called by the checkpoint and when many have gathered:
   * units are derived data, so one write per batch beats one per message. */
  flushWrites(): void {
    this.#flushWrites();
  }

  /** Something not yet durable: units, zeroed ranges or new file names. */
  get needsSync(): boolean {
    return this.#pending.length > 0 || this.#dirty.size > 0 || this.#newNames;
  }
  /** Makes written units and new file names durable (checkpoint); `fsSynced`: only writes. */
  async datasync(fsSynced = false): Promise<void> {
    // Puts from here on are the next sync's (the checkpoint read its bound before).
    this.unsyncedFrom = Infinity;
    this.unsyncedUnits = this.skippedSyncs = 0;
    this.#flushWrites();
    const dirty = [...this.#dirty], names = this.#newNames;
    this.#dirty.clear();
    this.#newNames = false;
    if (fsSynced) return; // the caller syncs the whole filesystem (FsSync)
    for (const f of dirty) await f.handle.datasync();
    if (names) await this.files.syncDir(this.dir);
  }

  /**
   * Drops units pointing at or beyond `commitLogOffset` (recovery truncation). After a
   * crash the tail may hold holes (unsynced writes lost) and units of later files that did
   * reach the disk. Below the checkpoint every unit is whole and points below it, so "the
   * unit is empty or points at/after `commitLogOffset`" is false up to some unit and true
   * from there on: a binary search finds it; everything after it is zeroed or deleted.
   * `clean`: the last run closed cleanly, so nothing was written past the loaded end and
   * only the dropped units are zeroed (reading every file to its end cost minutes with
   * 8,000 queues: bench/runtime).
   */
  truncateFromPhysical(commitLogOffset: number, clean = false): void {
    const end = this.#maxOffset;
    this.#flushWrites();
    const dropped = (q: number) => {
      const file = this.#fileOf(q);
      const unit = file ? this.#readUnits(file, q - file.firstUnit, 1)[0] : undefined;
      return !unit || unit.size === 0 ||
        (unit.size !== PAD_SIZE && unit.commitLogOffset >= commitLogOffset);
    };
    let lo = this.#minOffset, hi = this.#maxOffset;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (dropped(mid)) hi = mid;
      else lo = mid + 1;
    }
    const keep = lo;
    while (
      this.#files.length > 1 && this.#files.at(-1)!.firstUnit >= keep &&
      this.#files.at(-1)!.firstUnit > this.#minOffset
    ) {
      this.#removeFile(this.#files.pop()!);
    }
    const file = this.#fileOf(keep);
    if (file && !(clean && keep >= end)) {
      const upTo = clean ? Math.min(this.unitsPerFile, end - file.firstUnit) : this.unitsPerFile;
      this.#zeroFrom(file, keep - file.firstUnit, upTo);
    }
    this.#maxOffset = keep;
    const last = keep > this.#minOffset ? this.get(keep - 1) : undefined;
    this.#maxPhysicOffset = last && last.size !== PAD_SIZE ? last.commitLogOffset + last.size : 0;
  }

  /** Zeroes a file's units [fromUnit, upTo), writing only chunks that hold data. */
  #zeroFrom(file: CqFile, fromUnit: number, upTo: number) {
    const chunkUnits = 4096;
    for (let at = fromUnit; at < upTo; at += chunkUnits) {
      const n = Math.min(chunkUnits, upTo - at);
      const bytes = readFully(file.handle, at * CQ_UNIT_BYTES, n * CQ_UNIT_BYTES);
      if (allZero(bytes)) continue;
      file.handle.writeAt(new Uint8Array(n * CQ_UNIT_BYTES), at * CQ_UNIT_BYTES);
      this.#dirty.add(file);
    }
  }

  /**
   * Retention: deletes files whose last unit points below the CommitLog minimum (never the
   * last file) and moves minOffset to the first unit still in the CommitLog.
   */
  deleteBelow(commitLogMinOffset: number): void {
    this.#flushWrites();
    while (this.#files.length > 1) {
      const lastUnit = this.#readUnits(this.#files[0], this.unitsPerFile - 1, 1)[0];
      if (lastUnit.commitLogOffset + lastUnit.size > commitLogMinOffset) break;
      this.#removeFile(this.#files.shift()!);
      this.#minOffset = this.#files[0].firstUnit;
    }
    while (this.#minOffset < this.#maxOffset) {
      const unit = this.get(this.#minOffset)!;
      if (unit.size !== PAD_SIZE && unit.commitLogOffset >= commitLogMinOffset) break;
      this.#minOffset++;
    }
  }

  /**
   * First queue offset whose message was stored at or after `timestamp` (binary search;
   * store timestamps rise in CommitLog order). `storeTimeOf` reads it from the CommitLog.
   */
  offsetAtTime(timestamp: number, storeTimeOf: (unit: CqUnit) => number | undefined): number {
    let lo = this.#minOffset, hi = this.#maxOffset;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const unit = this.get(mid)!;
      const t = storeTimeOf(unit);
      if (t === undefined || t < timestamp) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  close(): void {
    this.#flushWrites();
    for (const f of this.#files) f.handle.close();
    this.#files = [];
  }

  destroy(): void {
    this.close();
    this.files.removeTree(this.dir);
  }

  #flushWrites() {
    if (this.#pending.length === 0) return;
    let unit = this.#pendingFirst;
    let i = 0;
    const total = this.#pending.length / 3;
    while (i < total) {
      const file = this.#fileOf(unit) ?? this.#createFile(unit);
      const n = Math.min(total - i, file.firstUnit + this.unitsPerFile - unit);
      const bytes = new Uint8Array(n * CQ_UNIT_BYTES);
      const view = new DataView(bytes.buffer);
      for (let k = 0; k < n; k++) {
        const p = (i + k) * 3;
        setLong(view, k * CQ_UNIT_BYTES, this.#pending[p]);
        view.setInt32(k * CQ_UNIT_BYTES + 8, this.#pending[p + 1]);
        setLong(view, k * CQ_UNIT_BYTES + 12, this.#pending[p + 2]);
      }
      file.handle.writeAt(bytes, (unit - file.firstUnit) * CQ_UNIT_BYTES);
      this.#dirty.add(file);
      i += n;
      unit += n;
    }
    this.#pending = [];
  }

  #padFront(queueOffset: number) {
    const file = this.#fileOf(queueOffset) ?? this.#createFile(queueOffset);
    const n = queueOffset - file.firstUnit;
    if (n === 0) return;
    const bytes = new Uint8Array(n * CQ_UNIT_BYTES);
    const view = new DataView(bytes.buffer);
    for (let k = 0; k < n; k++) view.setInt32(k * CQ_UNIT_BYTES + 8, PAD_SIZE);
    file.handle.writeAt(bytes, 0);
    this.#dirty.add(file);
  }

  #skipPadding() {
    while (this.#minOffset < this.#maxOffset && this.get(this.#minOffset)?.size === PAD_SIZE) {
      this.#minOffset++;
    }
  }

  #fileOf(queueOffset: number): CqFile | undefined {
    if (!this.#files.length) return undefined;
    const index = Math.floor((queueOffset - this.#files[0].firstUnit) / this.unitsPerFile);
    const file = this.#files[index];
    return file && queueOffset >= file.firstUnit && queueOffset < file.firstUnit + this.unitsPerFile
      ? file
      : undefined;
  }

  #createFile(queueOffset: number): CqFile {
    const firstUnit = queueOffset - (queueOffset % this.unitsPerFile);
    if (this.#files.length) {
      assert(
        this.#files.at(-1)!.firstUnit + this.unitsPerFile === firstUnit,
        "ConsumeQueue files not contiguous",
      );
    }
    this.files.mkdirp(this.dir);
    const name = String(firstUnit * CQ_UNIT_BYTES).padStart(20, "0");
    const handle = this.files.open(joinPath(this.dir, name), { create: true });
    handle.truncate(this.unitsPerFile * CQ_UNIT_BYTES);
    const file = { firstUnit, handle };
    this.#files.push(file);
    this.#newNames = true;
    return file;
  }

  #removeFile(file: CqFile) {
    file.handle.close();
    this.files.remove(file.handle.path);
    this.#dirty.delete(file);
    this.#newNames = true;
  }

  #readUnits(file: CqFile, fromUnit: number, count: number): CqUnit[] {
    const bytes = readFully(file.handle, fromUnit * CQ_UNIT_BYTES, count * CQ_UNIT_BYTES);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const out: CqUnit[] = [];
    for (let k = 0; k + CQ_UNIT_BYTES <= bytes.length; k += CQ_UNIT_BYTES) {
      out.push({
        queueOffset: file.firstUnit + fromUnit + k / CQ_UNIT_BYTES,
        commitLogOffset: getLong(view, k),
        size: view.getInt32(k + 8),
        tagsCode: getLong(view, k + 12),
      });
    }
    return out;
  }
}

/** True when every byte is 0: by 32-bit words where aligned (a per-byte callback is ~10x slower). */
function allZero(bytes: Uint8Array): boolean {
  const words = bytes.byteOffset % 4 === 0 ? bytes.length >> 2 : 0;
  const view = new Int32Array(bytes.buffer, bytes.byteOffset, words);
  for (let i = 0; i < words; i++) if (view[i] !== 0) return false;
  for (let i = words * 4; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}
