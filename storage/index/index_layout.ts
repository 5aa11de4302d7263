// The IndexFile's sizes, settings and types, and the error bad ones raise: what
// IndexService, IndexFile and the codec share, in a leaf. The layout is drawn in
// index_file.ts.
import type { DispatchRequest } from "../dispatch_request.ts";

export const INDEX_HEADER_BYTES = 40; // IndexHeader.INDEX_HEADER_SIZE
export const INDEX_SLOT_BYTES = 4; // IndexFile.hashSlotSize
export const INDEX_ENTRY_BYTES = 20; // IndexFile.indexSize
export const INVALID_INDEX = 0; // IndexFile.invalidIndex
export const INT32_MAX = 2 ** 31 - 1;

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

/** Byte position of entry `n` in the file. */
export function entryPosition(layout: IndexLayout, n: number): number {
  return INDEX_HEADER_BYTES + layout.hashSlotNum * INDEX_SLOT_BYTES +
    n * INDEX_ENTRY_BYTES;
}
