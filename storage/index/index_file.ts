// One IndexFile: a hash table on disk from message key to commit-log offset, so a
// message is found by KEYS or UNIQ_KEY without scanning the CommitLog. Layout, header and
// entry codecs and key hashes: index_layout.ts.
//
// The put path makes no syscall: a writable file keeps its slot table in memory and new
// entries in a buffer. A checkpoint (writeDirty()) writes the new entries, in one
// sequential write, then the header. The slot table is written whole only when the file
// is sealed or closed (writeDirty(true)): every start rebuilds the newest file's slots
// from its entries (recover()), so slot pages written at checkpoints would never be read.
// They cost a random 4 KiB write per key: about 125 scattered pwrites a second on the
// event loop at 170 keys/s (a 5 ms stall every second), 20 MiB/s at 13k keys/s.
// Queries read memory first, so entries not yet written are visible.
import type { FileHandle, FilePort } from "../file_port.ts";
import { readFully } from "../file_port.ts";
import { assert } from "../errors.ts";
import {
  checkIndexLayout,
  decodeEntry,
  decodeHeader,
  encodeHeader,
  type Entry,
  INDEX_ENTRY_BYTES,
  INDEX_HEADER_BYTES,
  INDEX_SLOT_BYTES,
  type IndexedRecord,
  IndexError,
  indexFileBytes,
  type IndexHeader,
  indexKeyHash,
  type IndexLayout,
  INVALID_INDEX,
  RECOVER_BATCH_ENTRIES,
  setLong,
  SLOT_RUN_PAGES_MAX,
  SLOTS_PER_PAGE,
  SlotTable,
  timeDiffOf,
} from "./index_layout.ts";

export class IndexFile {
  #handle: FileHandle;
  #header: IndexHeader;
  /** Slot table of a writable file (or a sealed one not yet written); null: read the disk. */
  #slots: SlotTable | null = null;
  #pageDirty = new Uint8Array(0);
  #dirtyPages: number[] = [];
  /** Entries numbered #pendingFirst.. not yet written, 20 bytes each, big-endian. */
  #pending = new Uint8Array(0);
  #pendingView = new DataView(this.#pending.buffer);
  #pendingFirst = 1;
  #pendingCount = 0;
  #headerDirty = false;
  #unsynced = false;
  #sealed = false;

  private constructor(readonly path: string, readonly layout: IndexLayout, handle: FileHandle) {
    this.#handle = handle;
    this.#header = decodeHeader(readFully(handle, 0, INDEX_HEADER_BYTES));
  }

  /** A new writable file, full length (sparse); `begin` is where the previous file ended. */
  static create(
    files: FilePort,
    path: string,
    layout: IndexLayout,
    begin: { phyOffset: number; timestamp: number },
  ): IndexFile {
    checkIndexLayout(layout);
    const handle = files.open(path, { create: true });
    handle.truncate(indexFileBytes(layout));
    const file = new IndexFile(path, layout, handle);
    const { phyOffset, timestamp } = begin;
    Object.assign(file.#header, { beginPhyOffset: phyOffset, endPhyOffset: phyOffset });
    Object.assign(file.#header, { beginTimestamp: timestamp, endTimestamp: timestamp });
    file.#makeWritable(new SlotTable(layout.hashSlotNum));
    return file;
  }

  /** An existing file; `writable` loads its slot table into memory (the active file). */
  static open(files: FilePort, path: string, layout: IndexLayout, writable: boolean): IndexFile {
    checkIndexLayout(layout);
    const handle = files.open(path);
    const bytes = indexFileBytes(layout);
    if (handle.size() > bytes) {
      handle.close();
      throw new IndexError(
        "INDEX_FILE_ILLEGAL",
        `Cannot open index file ${path} as its ${handle.size()} bytes exceed the ${bytes} of ` +
          `hashSlotNum ${layout.hashSlotNum} and indexNum ${layout.indexNum}`,
      );
    }
    // Shorter: a crash lost the sparse extension; the missing tail was zeros.
    if (handle.size() < bytes) handle.truncate(bytes);
    const file = new IndexFile(path, layout, handle);
    if (writable) {
      const size = layout.hashSlotNum * INDEX_SLOT_BYTES;
      const raw = readFully(handle, INDEX_HEADER_BYTES, size);
      // A short read (a file cut short by a crash) leaves the missing slots 0.
      file.#makeWritable(SlotTable.of(raw.subarray(0, size), layout.hashSlotNum));
    }
    return file;
  }

  get header(): Readonly<IndexHeader> {
    return this.#header;
  }
  get endPhyOffset(): number {
    return this.#header.endPhyOffset;
  }
  get isFull(): boolean {
    return this.#header.indexCount >= this.layout.indexNum;
  }

  /** Indexes `key` for `record`. Memory only; the caller rolls to a new file when full. */
  putKey(key: string, record: IndexedRecord): void {
    this.putKeyHash(indexKeyHash(key), record);
  }

  /** putKey() given the key's indexKeyHash. */
  putKeyHash(keyHash: number, record: IndexedRecord): void {
    assert(this.#slots !== null && !this.#sealed, "IndexFile.putKey needs a writable file");
    assert(!this.isFull, "IndexFile.putKey on a full file");
    const { commitLogOffset, msgSize, storeTimestamp } = record;
    assert(Number.isSafeInteger(commitLogOffset) && commitLogOffset >= 0, "offset is a long");
    assert(Number.isSafeInteger(storeTimestamp) && storeTimestamp >= 0, "timestamp is a long");
    assert(msgSize > 0, "a record has a size");
    const h = this.#header;
    assert(commitLogOffset + msgSize >= h.endPhyOffset, "records are indexed in offset order");
    const n = h.indexCount;
    if (n === 1) {
      h.beginTimestamp = storeTimestamp;
      h.beginPhyOffset = commitLogOffset;
    }
    const slot = keyHash % this.layout.hashSlotNum;
    const prevIndex = this.#slots.get(slot);
    if (prevIndex === INVALID_INDEX) h.hashSlotCount++;
    const timeDiff = timeDiffOf(storeTimestamp, h.beginTimestamp);
    this.#appendEntry(keyHash, commitLogOffset, timeDiff, prevIndex);
    this.#slots.set(slot, n);
    const page = Math.floor(slot / SLOTS_PER_PAGE);
    if (this.#pageDirty[page] === 0) {
      this.#pageDirty[page] = 1;
      this.#dirtyPages.push(page);
    }
    h.indexCount = n + 1;
    h.endPhyOffset = commitLogOffset + msgSize;
    h.endTimestamp = Math.max(h.endTimestamp, storeTimestamp);
    this.#headerDirty = true;
  }

  /** RocketMQ isTimeMatched: [begin, end] overlaps the file's time range. */
  isTimeMatched(beginTimestamp: number, endTimestamp: number): boolean {
    const h = this.#header;
    return h.indexCount > 1 && beginTimestamp <= h.endTimestamp &&
      endTimestamp >= h.beginTimestamp;
  }

  /**
   * Appends to `out` the offsets of entries with `keyHash` whose time is in [begin, end],
   * newest first, until `out` holds maxNum. Equal hashes of different keys match too.
   */
  selectPhyOffsets(out: number[], keyHash: number, maxNum: number, begin: number, end: number) {
    const h = this.#header;
    let n = this.#readSlot(keyHash % this.layout.hashSlotNum);
    // prevIndex must name an older entry, so the walk ends within indexCount steps.
    while (n > INVALID_INDEX && n < h.indexCount && out.length < maxNum) {
      const e = this.#readEntry(n);
      if (e.timeDiff < 0) break;
      const time = h.beginTimestamp + e.timeDiff * 1000;
      if (e.keyHash === keyHash && time >= begin && time <= end) out.push(e.phyOffset);
      if (time < begin || e.prevIndex >= n) break;
      n = e.prevIndex;
    }
  }

  /** No more puts; memory is released once the next writeDirty() has written it. */
  seal(): void {
    this.#sealed = true;
  }

  /**
   * Writes new entries, then (with `slotPages`, always once sealed) the dirty slot pages,
   * then the header. Durable after sync(). Without the slot pages the file on disk is
   * readable only through recover(), which every start runs on the newest file.
   */
  writeDirty(slotPages = false): void {
    if (this.#pendingCount > 0) {
      const at = this.#entryPosition(this.#pendingFirst);
      this.#handle.writeAt(this.#pending.subarray(0, this.#pendingCount * INDEX_ENTRY_BYTES), at);
      this.#pendingFirst += this.#pendingCount;
      this.#pendingCount = 0;
      this.#unsynced = true;
    }
    if (slotPages || this.#sealed) this.#writeSlotPages();
    if (this.#headerDirty) {
      this.#handle.writeAt(encodeHeader(this.#header), 0);
      this.#headerDirty = false;
      this.#unsynced = true;
    }
    assert(this.#slots === null || this.#pendingFirst === this.#header.indexCount, "all written");
    if (this.#sealed) {
      this.#slots = null;
      this.#pending = new Uint8Array(0);
      this.#pendingView = new DataView(this.#pending.buffer);
    }
  }

  /** fdatasync of what writeDirty() wrote. A rejection means it may be lost: never retry. */
  async sync(): Promise<void> {
    if (!this.#unsynced) return;
    this.#unsynced = false;
    await this.#handle.datasync();
  }

  /** Everything, slot pages included, durable: the file opens readable as it is. */
  async flush(): Promise<void> {
    this.writeDirty(true);
    await this.sync();
  }

  /**
   * After an unclean stop the file may hold entries and slots written after its last
   * durable header, or a torn header. Keeps the header-counted entries below
   * `dispatchSafeOffset` (walking from entry 1, stopping at the first that is at or
   * beyond it, out of offset order, or not chained as a rebuild would chain it), then
   * rebuilds the slot table from them so that no slot names a lost entry. Returns the
   * entries kept; the file becomes writable and the caller flushes it.
   */
  recover(dispatchSafeOffset: number): number {
    const h = this.#header;
    const slots = new SlotTable(this.layout.hashSlotNum);
    const last = Math.min(h.indexCount, this.layout.indexNum) - 1;
    let kept = 0;
    let slotCount = 0;
    let lastPhyOffset = 0;
    let timeDiffMax = 0;
    scan: for (let first = 1; first <= last; first += RECOVER_BATCH_ENTRIES) {
      const count = Math.min(RECOVER_BATCH_ENTRIES, last - first + 1);
      const raw = readFully(this.#handle, this.#entryPosition(first), count * INDEX_ENTRY_BYTES);
      const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      for (let i = 0; i < count; i++) {
        if ((i + 1) * INDEX_ENTRY_BYTES > raw.byteLength) break scan;
        const e = decodeEntry(view, i * INDEX_ENTRY_BYTES);
        const slot = e.keyHash % this.layout.hashSlotNum;
        const valid = e.keyHash >= 0 && e.phyOffset >= lastPhyOffset &&
          e.phyOffset < dispatchSafeOffset && e.timeDiff >= 0 &&
          e.prevIndex === slots.get(slot);
        if (!valid) break scan;
        if (slots.get(slot) === INVALID_INDEX) slotCount++;
        slots.set(slot, first + i);
        kept++;
        lastPhyOffset = e.phyOffset;
        timeDiffMax = Math.max(timeDiffMax, e.timeDiff);
      }
    }
    if (kept === 0) {
      this.#header = decodeHeader(new Uint8Array(0));
    } else {
      // An entry's time is begin + timeDiff s; the header's own end is trusted only
      // when every entry it counts survived.
      const endTimestamp = h.beginTimestamp + timeDiffMax * 1000;
      h.endTimestamp = kept === last ? Math.max(h.endTimestamp, endTimestamp) : endTimestamp;
      // Every kept record starts at or below lastPhyOffset; every lost one above it.
      h.endPhyOffset = lastPhyOffset + 1;
      h.hashSlotCount = slotCount;
      h.indexCount = kept + 1;
    }
    this.#sealed = false;
    this.#pendingCount = 0;
    this.#makeWritable(slots);
    for (let page = 0; page < this.#pageDirty.length; page++) {
      this.#pageDirty[page] = 1;
      this.#dirtyPages.push(page);
    }
    this.#headerDirty = true;
    return kept;
  }

  close(): void {
    this.#handle.close();
  }

  #makeWritable(slots: SlotTable): void {
    this.#slots = slots;
    this.#pageDirty = new Uint8Array(Math.ceil(slots.length / SLOTS_PER_PAGE));
    this.#dirtyPages = [];
    this.#pendingFirst = this.#header.indexCount;
  }

  #entryPosition(n: number): number {
    return INDEX_HEADER_BYTES + this.layout.hashSlotNum * INDEX_SLOT_BYTES +
      n * INDEX_ENTRY_BYTES;
  }

  #appendEntry(keyHash: number, phyOffset: number, timeDiff: number, prevIndex: number): void {
    const at = this.#pendingCount * INDEX_ENTRY_BYTES;
    if (at + INDEX_ENTRY_BYTES > this.#pending.byteLength) {
      // Doubles, never past the file's entries: the buffer's bound is indexNum.
      const entries = this.#pending.byteLength / INDEX_ENTRY_BYTES;
      const grown = new Uint8Array(
        Math.min(Math.max(64, entries * 2), this.layout.indexNum) * INDEX_ENTRY_BYTES,
      );
      grown.set(this.#pending);
      this.#pending = grown;
      this.#pendingView = new DataView(grown.buffer);
    }
    this.#pendingView.setInt32(at, keyHash);
    setLong(this.#pendingView, at + 4, phyOffset);
    this.#pendingView.setInt32(at + 12, timeDiff);
    this.#pendingView.setInt32(at + 16, prevIndex);
    this.#pendingCount++;
  }

  #readSlot(slot: number): number {
    if (this.#slots !== null) return this.#slots.get(slot);
    const raw = readFully(this.#handle, INDEX_HEADER_BYTES + slot * INDEX_SLOT_BYTES, 4);
    return raw.byteLength === 4 ? new DataView(raw.buffer).getInt32(0) : INVALID_INDEX;
  }

  #readEntry(n: number): Entry {
    if (this.#slots !== null && n >= this.#pendingFirst) {
      return decodeEntry(this.#pendingView, (n - this.#pendingFirst) * INDEX_ENTRY_BYTES);
    }
    const raw = new Uint8Array(INDEX_ENTRY_BYTES); // past a short file's end: zeros
    raw.set(readFully(this.#handle, this.#entryPosition(n), INDEX_ENTRY_BYTES));
    return decodeEntry(new DataView(raw.buffer), 0);
  }

  /** Writes the dirty pages, each run of adjacent pages as one write of at most
   * SLOT_RUN_PAGES_MAX pages within one of its multiples, straight from the table. */
  #writeSlotPages(): void {
    const pages = this.#dirtyPages;
    if (pages.length === 0) return;
    assert(this.#slots !== null, "dirty slot pages live in memory");
    const slots = this.#slots;
    pages.sort((a, b) => a - b);
    for (let i = 0; i < pages.length;) {
      let j = i + 1;
      while (
        j < pages.length && pages[j] === pages[j - 1] + 1 && pages[j] % SLOT_RUN_PAGES_MAX !== 0
      ) j++;
      const firstSlot = pages[i] * SLOTS_PER_PAGE;
      const endSlot = Math.min((pages[j - 1] + 1) * SLOTS_PER_PAGE, slots.length);
      this.#handle.writeAt(
        slots.slice(firstSlot, endSlot),
        INDEX_HEADER_BYTES + firstSlot * INDEX_SLOT_BYTES,
      );
      i = j;
    }
    for (const page of pages) this.#pageDirty[page] = 0;
    pages.length = 0;
    this.#unsynced = true;
  }
}
