// The slot table of a writable IndexFile, kept in memory in the file's own byte order so
// sealing writes its dirty pages straight from it.
import { INDEX_SLOT_BYTES } from "./index_layout.ts";

/**
 * The slot table of a writable file, held as the file holds it (big-endian int32s), so a
 * dirty page is written straight from it when the file is sealed or closed: with random
 * keys nearly every page is dirty by then, and converting 5M slots cost a DataView store
 * per slot plus a buffer per page.
 */
export class SlotTable {
  readonly bytes: Uint8Array;
  readonly length: number;
  readonly #view: DataView;

  /** `from`: the file's slot bytes (copied), or the number of slots (all 0). */
  constructor(from: Uint8Array | number) {
    this.bytes = typeof from === "number"
      ? new Uint8Array(from * INDEX_SLOT_BYTES)
      : new Uint8Array(from);
    this.length = this.bytes.length / INDEX_SLOT_BYTES;
    this.#view = new DataView(this.bytes.buffer);
  }

  get(slot: number): number {
    return this.#view.getInt32(slot * INDEX_SLOT_BYTES);
  }

  set(slot: number, value: number): void {
    this.#view.setInt32(slot * INDEX_SLOT_BYTES, value);
  }

  /** The file bytes of slots [first, end). A view: write it before the next set(). */
  slice(first: number, end: number): Uint8Array {
    return this.bytes.subarray(first * INDEX_SLOT_BYTES, end * INDEX_SLOT_BYTES);
  }
}
