// StoreCheckpoint (reference/rocketmq.md §5): one 4 KiB page at `root/checkpoint`.
// RocketMQ's first three longs are kept at their offsets; we add the two offsets our
// recovery starts from and a CRC so a torn page is recognised and ignored.
//
//   0 physicMsgTimestamp   8 logicsMsgTimestamp   16 indexMsgTimestamp
//  24 flushedOffset        CommitLog bytes below it were fdatasync'ed before this write
//  32 dispatchSafeOffset   a record boundary; ConsumeQueues and index are durable below it
//  40 crc32 of bytes 0..39
//
// Written in place with one write + fdatasync: the 44 bytes sit in one 512-byte sector.
import { crc32 } from "./crc32.ts";
import type { FileHandle, FilePort } from "./file_port.ts";
import { readFully } from "./file_port.ts";
import { getLong, setLong } from "./message/record.ts";

export const CHECKPOINT_BYTES = 4096;
const CRC_AT = 40;

export interface CheckpointState {
  physicMsgTimestamp: number;
  logicsMsgTimestamp: number;
  indexMsgTimestamp: number;
  flushedOffset: number;
  dispatchSafeOffset: number;
}

export class StoreCheckpoint {
  #handle: FileHandle;
  #created: boolean;

  constructor(private readonly files: FilePort, readonly path: string, readonly dir: string) {
    this.#created = !files.exists(path);
    this.#handle = files.open(path, { create: true });
    if (this.#handle.size() < CHECKPOINT_BYTES) this.#handle.truncate(CHECKPOINT_BYTES);
  }

  /** The last state written, or undefined if none was ever written or the page is torn. */
  read(): CheckpointState | undefined {
    const bytes = readFully(this.#handle, 0, CRC_AT + 4);
    if (bytes.length < CRC_AT + 4) return undefined;
    const view = new DataView(bytes.buffer);
    if ((crc32(bytes.subarray(0, CRC_AT)) | 0) !== view.getInt32(CRC_AT)) return undefined;
    const state = {
      physicMsgTimestamp: getLong(view, 0),
      logicsMsgTimestamp: getLong(view, 8),
      indexMsgTimestamp: getLong(view, 16),
      flushedOffset: getLong(view, 24),
      dispatchSafeOffset: getLong(view, 32),
    };
    return state.flushedOffset === 0 && state.dispatchSafeOffset === 0 &&
        state.physicMsgTimestamp === 0
      ? undefined
      : state;
  }

  async write(state: CheckpointState): Promise<void> {
    const bytes = new Uint8Array(CRC_AT + 4);
    const view = new DataView(bytes.buffer);
    setLong(view, 0, state.physicMsgTimestamp);
    setLong(view, 8, state.logicsMsgTimestamp);
    setLong(view, 16, state.indexMsgTimestamp);
    setLong(view, 24, state.flushedOffset);
    setLong(view, 32, state.dispatchSafeOffset);
    view.setInt32(CRC_AT, crc32(bytes.subarray(0, CRC_AT)) | 0);
    this.#handle.writeAt(bytes, 0);
    await this.#handle.datasync();
    if (this.#created) {
      this.#created = false;
      await this.files.syncDir(this.dir);
    }
  }

  close(): void {
    this.#handle.close();
  }
}
