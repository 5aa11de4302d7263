// The layout of an IndexFile (index_file.ts), a hash table on disk from message key to
// commit-log offset (reference/rocketmq.md §4; RocketMQ IndexFile.java, IndexHeader.java),
// big-endian:
//
//   0            40                    40 + 4*hashSlotNum                  size
//   | header 40 B | slot[0..hashSlotNum) | entry[0..indexNum), 20 B each |
//   header:  long beginTimestamp | long endTimestamp | long beginPhyOffset |
//            long endPhyOffset | int hashSlotCount | int indexCount (next entry number)
//   slot s:  int, newest entry number with keyHash % hashSlotNum === s, or 0
//   entry n: int keyHash | long phyOffset | int timeDiff (s) | int prevIndex (0 ends)
//
// Entry 0 is never used (0 ends a chain), so a file holds indexNum - 1 entries, as
// RocketMQ's isWriteFull (indexCount >= indexNum). One deviation: endPhyOffset is the
// offset just past the last indexed record (RocketMQ stores its start), so every record
// below it is indexed and re-dispatching the last one is skipped, not indexed twice.
//
// This file: the layout's constants, the header and entry codecs, and the key hashes.
// IndexFile (index_file.ts) puts and queries; IndexService (index_service.ts) keeps the files.
import { assert } from "../errors.ts";
import type { DispatchRequest } from "../dispatch_request.ts";
import { javaStringHashCode } from "../message/record.ts";

export const INDEX_HEADER_BYTES = 40; // IndexHeader.INDEX_HEADER_SIZE
export const INDEX_SLOT_BYTES = 4; // IndexFile.hashSlotSize
export const INDEX_ENTRY_BYTES = 20; // IndexFile.indexSize
export const INVALID_INDEX = 0; // IndexFile.invalidIndex
const SLOT_PAGE_BYTES = 4096;
export const SLOTS_PER_PAGE = SLOT_PAGE_BYTES / INDEX_SLOT_BYTES;
/** Adjacent dirty pages merged into one write, at most 256 KiB a write, never across a
 * multiple of it (the slot table's chunks). */
export const SLOT_RUN_PAGES_MAX = 64;
const SLOTS_PER_CHUNK = SLOT_RUN_PAGES_MAX * (SLOT_PAGE_BYTES / INDEX_SLOT_BYTES);
const SLOT_CHUNK_BYTES = SLOTS_PER_CHUNK * INDEX_SLOT_BYTES;
const CHUNK_SHIFT = 16;
const CHUNK_MASK = SLOTS_PER_CHUNK - 1;
assert(SLOTS_PER_CHUNK === 2 ** CHUNK_SHIFT && INDEX_SLOT_BYTES === 4, "slot chunk shifts");
/** Entries read per readAt while recovering (80 KiB). */
export const RECOVER_BATCH_ENTRIES = 4096;
const INT32_MAX = 2 ** 31 - 1;
const UINT32_RANGE = 2 ** 32;
assert(SLOT_PAGE_BYTES % INDEX_SLOT_BYTES === 0, "slot page holds whole slots");

/**
 * The slot table of a writable file, held as the file holds it (big-endian int32s), so a
 * dirty page is written straight from it when the file is sealed or closed: with random
 * keys nearly every page is dirty by then, and converting 5M slots cost a DataView store
 * per slot plus a buffer per page. Held in chunks of SLOT_RUN_PAGES_MAX pages, each
 * allocated on its first non-zero slot: a new file's 20 MB table is not allocated whole at
 * the first put (Bun sometimes touched every page of such an array, +16-20 MiB of idle RSS:
 * bench/README.md "Round 5 (branch idle)"); a chunk never allocated reads as zeros.
 */
export class SlotTable {
  readonly length: number;
  readonly #chunks: (DataView | undefined)[];

  /** The number of slots, all 0. */
  constructor(length: number) {
    this.length = length;
    this.#chunks = new Array(Math.ceil(length / SLOTS_PER_CHUNK));
  }

  /** A table holding `bytes`, a file's slot bytes (copied; all-zero chunks stay unallocated). */
  static of(bytes: Uint8Array, length: number): SlotTable {
    const table = new SlotTable(length);
    for (let c = 0; c < table.#chunks.length; c++) {
      const from = c * SLOT_CHUNK_BYTES;
      const part = bytes.subarray(from, Math.min(from + SLOT_CHUNK_BYTES, bytes.length));
      for (let i = 0; i < part.length; i++) {
        if (part[i] !== 0) {
          table.#chunk(c).set(part);
          break;
        }
      }
    }
    return table;
  }

  /** Chunks allocated so far. */
  get allocatedChunks(): number {
    return this.#chunks.filter((c) => c !== undefined).length;
  }

  // Slots are below 2^31 and SLOTS_PER_CHUNK is 2^16: shifts, not divisions (the put path).
  get(slot: number): number {
    const chunk = this.#chunks[slot >>> CHUNK_SHIFT];
    return chunk === undefined ? 0 : chunk.getInt32((slot & CHUNK_MASK) << 2);
  }

  set(slot: number, value: number): void {
    const c = slot >>> CHUNK_SHIFT;
    const chunk = this.#chunks[c] ?? (value === 0 ? undefined : this.#view(c));
    chunk?.setInt32((slot & CHUNK_MASK) << 2, value);
  }

  /** The file bytes of slots [first, end), within one chunk (runs of SLOT_RUN_PAGES_MAX
   * pages from a multiple of it). A view when allocated: write it before the next set(). */
  slice(first: number, end: number): Uint8Array {
    const c = Math.floor(first / SLOTS_PER_CHUNK);
    assert(end - c * SLOTS_PER_CHUNK <= SLOTS_PER_CHUNK, "a slot run within one chunk");
    const at = (first - c * SLOTS_PER_CHUNK) * INDEX_SLOT_BYTES;
    const chunk = this.#chunks[c];
    const n = (end - first) * INDEX_SLOT_BYTES;
    return chunk ? new Uint8Array(chunk.buffer, at, n) : new Uint8Array(n);
  }

  #view(c: number): DataView {
    const bytes = Math.min(
      SLOT_CHUNK_BYTES,
      (this.length - c * SLOTS_PER_CHUNK) * INDEX_SLOT_BYTES,
    );
    return this.#chunks[c] = new DataView(new ArrayBuffer(bytes));
  }

  #chunk(c: number): Uint8Array {
    return new Uint8Array((this.#chunks[c] ?? this.#view(c)).buffer);
  }
}

export type IndexErrorCode = "INDEX_CONFIG_ILLEGAL" | "INDEX_QUERY_ILLEGAL" | "INDEX_FILE_ILLEGAL";

/** Bad settings, query arguments or file sizes handed to the index. */
export class IndexError extends Error {
  constructor(readonly code: IndexErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "IndexError";
  }
}

/** maxHashSlotNum and maxIndexNum of StoreConfig. */
export interface IndexLayout {
  hashSlotNum: number;
  indexNum: number;
}

export interface IndexHeader {
  beginTimestamp: number;
  endTimestamp: number;
  beginPhyOffset: number;
  endPhyOffset: number;
  hashSlotCount: number;
  indexCount: number;
}

/** What an entry needs of a dispatched record; DispatchRequest satisfies it. */
export type IndexedRecord = Pick<DispatchRequest, "commitLogOffset" | "msgSize" | "storeTimestamp">;

export function checkIndexLayout(layout: IndexLayout): void {
  const { hashSlotNum, indexNum } = layout;
  if (!Number.isInteger(hashSlotNum) || hashSlotNum < 1 || hashSlotNum > INT32_MAX) {
    throw new IndexError("INDEX_CONFIG_ILLEGAL", `Cannot use hashSlotNum ${hashSlotNum}`);
  }
  // Entry numbers are Java ints; 2 is the least that holds one entry.
  if (!Number.isInteger(indexNum) || indexNum < 2 || indexNum > INT32_MAX) {
    throw new IndexError("INDEX_CONFIG_ILLEGAL", `Cannot use indexNum ${indexNum}`);
  }
}

export function indexFileBytes(layout: IndexLayout): number {
  return INDEX_HEADER_BYTES + layout.hashSlotNum * INDEX_SLOT_BYTES +
    layout.indexNum * INDEX_ENTRY_BYTES;
}

/** abs(key.hashCode()); Java's abs(MIN_VALUE) stays negative, which RocketMQ maps to 0. */
export function indexKeyHash(key: string): number {
  return absHash(javaStringHashCode(key));
}

/**
 * indexKeyHash(`${topic}#${key}`), the key RocketMQ's buildKey makes, without building that
 * string: String.hashCode is h = 31 * h + c over the UTF-16 units, so it runs on across the
 * three parts. Every indexed put hashes its UNIQ_KEY this way.
 */
export function topicKeyHash(topic: string, key: string): number {
  let h = 0;
  for (let i = 0; i < topic.length; i++) h = (Math.imul(h, 31) + topic.charCodeAt(i)) | 0;
  h = (Math.imul(h, 31) + 35) | 0; // "#"
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  return absHash(h);
}

function absHash(hash: number): number {
  return hash === -(2 ** 31) ? 0 : Math.abs(hash);
}

/** Seconds since beginTimestamp, truncated as Java's long division, clamped to [0, 2^31-1]. */
export function timeDiffOf(storeTimestamp: number, beginTimestamp: number): number {
  if (beginTimestamp <= 0) return 0;
  const diff = Math.trunc((storeTimestamp - beginTimestamp) / 1000);
  return Math.min(Math.max(diff, 0), INT32_MAX);
}

// A long as two 32-bit halves: no BigInt allocation on the put path.
export function setLong(view: DataView, at: number, value: number): void {
  view.setUint32(at, Math.floor(value / UINT32_RANGE));
  view.setUint32(at + 4, value >>> 0);
}
function getLong(view: DataView, at: number): number {
  return view.getInt32(at) * UINT32_RANGE + view.getUint32(at + 4);
}

export function encodeHeader(h: IndexHeader): Uint8Array {
  const bytes = new Uint8Array(INDEX_HEADER_BYTES);
  const view = new DataView(bytes.buffer);
  setLong(view, 0, h.beginTimestamp);
  setLong(view, 8, h.endTimestamp);
  setLong(view, 16, h.beginPhyOffset);
  setLong(view, 24, h.endPhyOffset);
  view.setInt32(32, h.hashSlotCount);
  view.setInt32(36, h.indexCount);
  return bytes;
}

export function decodeHeader(bytes: Uint8Array): IndexHeader {
  const full = new Uint8Array(INDEX_HEADER_BYTES); // a short file reads as zeros
  full.set(bytes);
  const view = new DataView(full.buffer);
  return {
    beginTimestamp: getLong(view, 0),
    endTimestamp: getLong(view, 8),
    beginPhyOffset: getLong(view, 16),
    endPhyOffset: getLong(view, 24),
    hashSlotCount: view.getInt32(32),
    // A header never written holds 0; RocketMQ's load() treats that as 1 (empty).
    indexCount: Math.max(view.getInt32(36), 1),
  };
}

export interface Entry {
  keyHash: number;
  phyOffset: number;
  timeDiff: number;
  prevIndex: number;
}

export function decodeEntry(view: DataView, at: number): Entry {
  return {
    keyHash: view.getInt32(at),
    phyOffset: getLong(view, at + 4),
    timeDiff: view.getInt32(at + 12),
    prevIndex: view.getInt32(at + 16),
  };
}
