// The big-endian codec of an IndexFile's header and entries (layout in index_file.ts),
// longs as two 32-bit halves so the put path allocates no BigInt.
import { INDEX_HEADER_BYTES, type IndexHeader, INT32_MAX } from "./index_layout.ts";

const UINT32_RANGE = 2 ** 32;

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
export function getLong(view: DataView, at: number): number {
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
