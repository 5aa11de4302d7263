// The replication frames' wire codec: encodeFrame and decodeFrame, one whole frame each way.
//
// Every frame, big-endian:
//
//    0  u32 length   bytes after this field: 5 + payload
//    4  u8  type     1 HANDSHAKE, 2 HANDSHAKE_REPLY, 3 TRANSFER, 4 ACK, 5 HEARTBEAT
//    5  u32 epoch    sender's epoch, 0..2^31-1 (RocketMQ epochs are ints)
//    9  payload
//
// HANDSHAKE (slave -> master), 27 + 12n bytes:
//    0 u16 version (1)   2 u8 flags (bit 0: syncFromLastFile)   3 u32 brokerId
//    7 u64 minOffset    15 u64 maxOffset    23 u32 n    27 n x (u32 epoch, u64 startOffset)
// HANDSHAKE_REPLY (master -> slave), 33 bytes:
//    0 u8 status (0 OK, 1 DIVERGED, 2 BEHIND)   1 u64 masterMinOffset   9 u64 masterMaxOffset
//   17 u64 truncateOffset   25 u64 startOffset
// TRANSFER (master -> slave), 36 + bodySize bytes:
//    0 u64 offset   8 u32 dataEpoch   12 u64 dataEpochStart   20 u64 confirmOffset
//   28 u32 bodySize   32 u32 bodyCrc   36 body: whole CommitLog records
//   bodyCrc is CRC32 of the body, computed by encodeFrame and checked by the decoder: a
//   record's BODYCRC covers its body only, so bytes damaged in flight in a header, topic or
//   properties would otherwise pass. (Records damaged on the master's disk keep a valid
//   frame CRC; the slave's per-record checks catch those.)
// ACK (slave -> master), 8 bytes:        0 u64 maxOffset (what the slave holds)
// HEARTBEAT (master -> slave), 16 bytes: 0 u64 masterMaxOffset   8 u64 confirmOffset
//
// Offsets are u64 on the wire and must be safe integers (< 2^53) here.
import { crc32 } from "../../storage/crc32.ts";
import { getLong, setLong } from "../../storage/message/record.ts";
import { EPOCH_MAX, type EpochEntry } from "../../storage/ha/epoch_file.ts";
import {
  FLAG_SYNC_FROM_LAST_FILE,
  type Frame,
  FRAME_HEADER_BYTES,
  FrameError,
  HA_EPOCH_ENTRIES_MAX,
  HA_PROTOCOL_VERSION,
  type HandshakeStatus,
  STATUS_CODE,
  TYPE_CODE,
} from "./frame_types.ts";

function payloadBytes(frame: Frame): number {
  switch (frame.type) {
    case "HANDSHAKE":
      return 27 + 12 * frame.entries.length;
    case "HANDSHAKE_REPLY":
      return 33;
    case "TRANSFER":
      return 36 + frame.body.length;
    case "ACK":
      return 8;
    case "HEARTBEAT":
      return 16;
  }
}

/** One frame as bytes. Throws FRAME_FIELD_ILLEGAL for values the layout cannot carry. */
export function encodeFrame(frame: Frame): Uint8Array {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES + payloadBytes(frame));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, bytes.length - 4);
  view.setUint8(4, TYPE_CODE[frame.type]);
  view.setUint32(5, checkEpoch(frame.epoch));
  const p = FRAME_HEADER_BYTES;
  const long = (at: number, value: number) => setLong(view, p + at, checkOffset(value));
  switch (frame.type) {
    case "HANDSHAKE":
      view.setUint16(p, frame.version);
      view.setUint8(p + 2, frame.syncFromLastFile ? FLAG_SYNC_FROM_LAST_FILE : 0);
      view.setUint32(p + 3, frame.brokerId);
      long(7, frame.minOffset);
      long(15, frame.maxOffset);
      if (frame.entries.length > HA_EPOCH_ENTRIES_MAX) throw illegal("too many epoch entries");
      view.setUint32(p + 23, frame.entries.length);
      frame.entries.forEach((e, i) => {
        view.setUint32(p + 27 + 12 * i, checkEpoch(e.epoch));
        long(31 + 12 * i, e.startOffset);
      });
      break;
    case "HANDSHAKE_REPLY":
      view.setUint8(p, STATUS_CODE[frame.status]);
      long(1, frame.masterMinOffset);
      long(9, frame.masterMaxOffset);
      long(17, frame.truncateOffset);
      long(25, frame.startOffset);
      break;
    case "TRANSFER":
      long(0, frame.offset);
      view.setUint32(p + 8, checkEpoch(frame.dataEpoch));
      long(12, frame.dataEpochStart);
      long(20, frame.confirmOffset);
      view.setUint32(p + 28, frame.body.length);
      view.setUint32(p + 32, crc32(frame.body));
      bytes.set(frame.body, p + 36);
      break;
    case "ACK":
      long(0, frame.maxOffset);
      break;
    case "HEARTBEAT":
      long(0, frame.masterMaxOffset);
      long(8, frame.confirmOffset);
      break;
  }
  return bytes;
}

/** Decodes one whole frame (length field included). */
export function decodeFrame(bytes: Uint8Array): Frame {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const code = view.getUint8(4);
  const epoch = readEpoch(view, 5, "epoch");
  const p = FRAME_HEADER_BYTES;
  const size = bytes.length - p;
  const expect = (want: number, type: string) => {
    if (size !== want) {
      throw new FrameError(
        "FRAME_LENGTH_ILLEGAL",
        `Cannot read a ${type} frame with a ${size}-byte payload: its layout needs ${want}`,
      );
    }
  };
  const long = (at: number, name: string) => readOffset(view, p + at, name);
  switch (code) {
    case TYPE_CODE.HANDSHAKE: {
      if (size < 27) expect(27, "HANDSHAKE");
      const n = view.getUint32(p + 23);
      if (n > HA_EPOCH_ENTRIES_MAX) {
        throw illegal(`${n} epoch entries (max ${HA_EPOCH_ENTRIES_MAX})`);
      }
      expect(27 + 12 * n, "HANDSHAKE");
      const version = view.getUint16(p);
      if (version !== HA_PROTOCOL_VERSION) throw illegal(`protocol version ${version}`);
      const flags = view.getUint8(p + 2);
      if (flags & ~FLAG_SYNC_FROM_LAST_FILE) throw illegal(`handshake flags ${flags}`);
      const entries: EpochEntry[] = [];
      for (let i = 0; i < n; i++) {
        entries.push({
          epoch: readEpoch(view, p + 27 + 12 * i, "entry epoch"),
          startOffset: long(31 + 12 * i, "entry start offset"),
        });
      }
      return {
        type: "HANDSHAKE",
        epoch,
        version,
        syncFromLastFile: (flags & FLAG_SYNC_FROM_LAST_FILE) !== 0,
        brokerId: view.getUint32(p + 3),
        minOffset: long(7, "minOffset"),
        maxOffset: long(15, "maxOffset"),
        entries,
      };
    }
    case TYPE_CODE.HANDSHAKE_REPLY: {
      expect(33, "HANDSHAKE_REPLY");
      const statusCode = view.getUint8(p);
      const status = (Object.keys(STATUS_CODE) as HandshakeStatus[]).find((s) =>
        STATUS_CODE[s] === statusCode
      );
      if (status === undefined) throw illegal(`handshake status ${statusCode}`);
      return {
        type: "HANDSHAKE_REPLY",
        epoch,
        status,
        masterMinOffset: long(1, "masterMinOffset"),
        masterMaxOffset: long(9, "masterMaxOffset"),
        truncateOffset: long(17, "truncateOffset"),
        startOffset: long(25, "startOffset"),
      };
    }
    case TYPE_CODE.TRANSFER: {
      if (size < 36) expect(36, "TRANSFER");
      expect(36 + view.getUint32(p + 28), "TRANSFER");
      const body = bytes.subarray(p + 36);
      if (crc32(body) !== view.getUint32(p + 32)) {
        throw new FrameError(
          "FRAME_CRC_MISMATCH",
          `Cannot accept a TRANSFER of ${body.length} bytes as its CRC32 does not match: damaged in flight`,
        );
      }
      return {
        type: "TRANSFER",
        epoch,
        offset: long(0, "offset"),
        dataEpoch: readEpoch(view, p + 8, "dataEpoch"),
        dataEpochStart: long(12, "dataEpochStart"),
        confirmOffset: long(20, "confirmOffset"),
        body,
      };
    }
    case TYPE_CODE.ACK:
      expect(8, "ACK");
      return { type: "ACK", epoch, maxOffset: long(0, "maxOffset") };
    case TYPE_CODE.HEARTBEAT:
      expect(16, "HEARTBEAT");
      return {
        type: "HEARTBEAT",
        epoch,
        masterMaxOffset: long(0, "masterMaxOffset"),
        confirmOffset: long(8, "confirmOffset"),
      };
    default:
      throw new FrameError(
        "FRAME_TYPE_UNKNOWN",
        `Cannot read a replication frame of type ${code}: known types are 1-5`,
      );
  }
}

function illegal(what: string): FrameError {
  return new FrameError("FRAME_FIELD_ILLEGAL", `Cannot accept a replication frame with ${what}`);
}

function checkEpoch(epoch: number): number {
  if (!Number.isInteger(epoch) || epoch < 0 || epoch > EPOCH_MAX) throw illegal(`epoch ${epoch}`);
  return epoch;
}

function checkOffset(offset: number): number {
  if (!Number.isSafeInteger(offset) || offset < 0) throw illegal(`offset ${offset}`);
  return offset;
}

function readEpoch(view: DataView, at: number, name: string): number {
  const value = view.getUint32(at);
  if (value > EPOCH_MAX) throw illegal(`${name} ${value} (max ${EPOCH_MAX})`);
  return value;
}

function readOffset(view: DataView, at: number, name: string): number {
  const hi = view.getUint32(at);
  if (hi > 0x1fffff) throw illegal(`${name} beyond 2^53`);
  return getLong(view, at);
}
