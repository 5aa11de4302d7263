// Recovery of an IndexFile after an unclean stop: the scan that keeps the entries a
// rebuild would chain the same way, below the dispatch-safe offset, and rebuilds the slot
// table from them. IndexFile.recover() applies the result to its header.
import type { FileHandle } from "../file_port.ts";
import { readFully } from "../file_port.ts";
import { decodeEntry } from "./index_codec.ts";
import {
  entryPosition,
  INDEX_ENTRY_BYTES,
  type IndexLayout,
  INVALID_INDEX,
} from "./index_layout.ts";
import { SlotTable } from "./slot_table.ts";

/** Entries read per readAt while recovering (80 KiB). */
const RECOVER_BATCH_ENTRIES = 4096;

/** What scanEntries() kept of entries 1..last, and the slot table rebuilt from them. */
export interface ScannedEntries {
  slots: SlotTable;
  /** The last entry the header counts. */
  last: number;
  kept: number;
  slotCount: number;
  lastPhyOffset: number;
  timeDiffMax: number;
}

/**
 * Walks the `indexCount` header-counted entries from entry 1, stopping at the first that
 * is at or beyond `dispatchSafeOffset`, out of offset order, or not chained as a rebuild
 * would chain it.
 */
export function scanEntries(
  handle: FileHandle,
  layout: IndexLayout,
  indexCount: number,
  dispatchSafeOffset: number,
): ScannedEntries {
  const slots = new SlotTable(layout.hashSlotNum);
  const last = Math.min(indexCount, layout.indexNum) - 1;
  let kept = 0;
  let slotCount = 0;
  let lastPhyOffset = 0;
  let timeDiffMax = 0;
  scan: for (let first = 1; first <= last; first += RECOVER_BATCH_ENTRIES) {
    const count = Math.min(RECOVER_BATCH_ENTRIES, last - first + 1);
    const raw = readFully(handle, entryPosition(layout, first), count * INDEX_ENTRY_BYTES);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < count; i++) {
      if ((i + 1) * INDEX_ENTRY_BYTES > raw.byteLength) break scan;
      const e = decodeEntry(view, i * INDEX_ENTRY_BYTES);
      const slot = e.keyHash % layout.hashSlotNum;
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
  return { slots, last, kept, slotCount, lastPhyOffset, timeDiffMax };
}
