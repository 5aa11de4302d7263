// The replication frames as values: their types, the protocol's constants and limits, and
// FrameError. A leaf module, so the codec and the stream decoder share it without a cycle;
// the byte layouts are drawn in frame_codec.ts.
import type { EpochEntry } from "../../storage/ha/epoch_file.ts";

export const HA_PROTOCOL_VERSION = 1;
export const FRAME_HEADER_BYTES = 9;
/** Largest frame by default: RocketMQ's remoting frame limit (16 MiB, rocketmq.md §18). It
 * must hold the largest record (maxMessageSize + 64 KiB) plus the transfer header. */
export const HA_FRAME_BYTES_MAX = 16 * 1024 * 1024;
/** Epoch entries a handshake may carry (one per master change: far more than a group sees). */
export const HA_EPOCH_ENTRIES_MAX = 65_536;
export const TRANSFER_HEADER_BYTES = FRAME_HEADER_BYTES + 36;

export const TYPE_CODE = {
  HANDSHAKE: 1,
  HANDSHAKE_REPLY: 2,
  TRANSFER: 3,
  ACK: 4,
  HEARTBEAT: 5,
} as const;
export const STATUS_CODE = { OK: 0, DIVERGED: 1, BEHIND: 2 } as const;
export const FLAG_SYNC_FROM_LAST_FILE = 1;

/** OK: truncate to truncateOffset, then receive from startOffset. DIVERGED: no common epoch.
 * BEHIND: the common history ends below the master's oldest segment. Both need a resync. */
export type HandshakeStatus = keyof typeof STATUS_CODE;

export interface HandshakeFrame {
  type: "HANDSHAKE";
  epoch: number;
  version: number;
  syncFromLastFile: boolean;
  brokerId: number;
  minOffset: number;
  maxOffset: number;
  entries: EpochEntry[];
}
export interface HandshakeReplyFrame {
  type: "HANDSHAKE_REPLY";
  epoch: number;
  status: HandshakeStatus;
  masterMinOffset: number;
  masterMaxOffset: number;
  truncateOffset: number;
  startOffset: number;
}
export interface TransferFrame {
  type: "TRANSFER";
  epoch: number;
  offset: number;
  dataEpoch: number;
  dataEpochStart: number;
  confirmOffset: number;
  body: Uint8Array;
}
export interface AckFrame {
  type: "ACK";
  epoch: number;
  maxOffset: number;
}
export interface HeartbeatFrame {
  type: "HEARTBEAT";
  epoch: number;
  masterMaxOffset: number;
  confirmOffset: number;
}
export type Frame =
  | HandshakeFrame
  | HandshakeReplyFrame
  | TransferFrame
  | AckFrame
  | HeartbeatFrame;

export type FrameErrorCode =
  | "FRAME_TOO_LARGE" // length beyond the receiver's frameBytesMax
  | "FRAME_LENGTH_ILLEGAL" // length does not fit the type's layout
  | "FRAME_TYPE_UNKNOWN"
  | "FRAME_CRC_MISMATCH" // a TRANSFER body whose CRC32 is not the one sent with it
  | "FRAME_FIELD_ILLEGAL"; // a field out of range: version, epoch, offset, status, flags

export class FrameError extends Error {
  constructor(readonly code: FrameErrorCode, message: string) {
    super(message);
    this.name = "FrameError";
  }
}
