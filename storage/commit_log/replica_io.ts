// CommitLog bytes as replication moves them (reference/rocketmq.md §15): a master reads
// whole records from an offset, a slave verifies them before it writes them at the same
// offset. Records are never split across chunks, so a slave can check every record it
// takes (CRC, its own offset, queue order) and a refused chunk leaves it at a record
// boundary. A chunk never crosses a segment end; the BLANK that closes a segment is sent
// (8 bytes, the rest of the segment is zeros on both sides) so the slave rolls too.
import { readFully } from "../file_port.ts";
import { CorruptRecordError } from "../errors.ts";
import {
  BLANK_MAGIC,
  END_FILE_MIN_BLANK_BYTES,
  MAGIC_V1,
  MAGIC_V2,
  type MessageRecord,
} from "../message/record.ts";
import { parseRecord } from "../message/record_decode.ts";
import { buildsConsumeQueue } from "../dispatch_request.ts";
import type { CommitLog } from "./commit_log.ts";

/** Smallest record: IPv4, V1, empty body, 1-byte topic, no properties (91 + 1). */
const RECORD_BYTES_MIN = 92;

export interface CommitLogChunk {
  /** Whole records from `from`, possibly ending with an 8-byte BLANK. */
  bytes: Uint8Array;
  /** Where the next chunk starts: after the last record, or the next segment after a BLANK. */
  nextOffset: number;
}

/**
 * Whole records from `from` up to `maxBytes` (at least one record, however large), never
 * past `endOffset` or the end of `from`'s segment. Only sizes and magic codes are read
 * here; the slave checks CRCs. A `from` that is not a record boundary is damage or a bug of
 * the caller: CorruptRecordError.
 */
export function readWholeRecords(
  log: CommitLog,
  from: number,
  maxBytes: number,
  endOffset: number,
  recordBytesMax: number,
): CommitLogChunk {
  const end = Math.min(endOffset, log.wroteOffset);
  const segment = log.findSegment(from);
  if (from >= end || !segment) return { bytes: new Uint8Array(0), nextOffset: from };
  const limit = Math.min(end, segment.endOffset) - from;
  let bytes = readFully(segment.file, from - segment.startOffset, Math.min(maxBytes, limit));
  let at = 0;
  while (bytes.length - at >= END_FILE_MIN_BLANK_BYTES) {
    const view = new DataView(bytes.buffer, bytes.byteOffset + at);
    const size = view.getInt32(0), magic = view.getInt32(4);
    if (magic === BLANK_MAGIC && from + at + size === segment.endOffset) {
      return {
        bytes: bytes.subarray(0, at + END_FILE_MIN_BLANK_BYTES),
        nextOffset: segment.endOffset,
      };
    }
    if (
      (magic !== MAGIC_V1 && magic !== MAGIC_V2) || size < RECORD_BYTES_MIN ||
      size > recordBytesMax || at + size > limit
    ) {
      if (at > 0) break;
      throw new CorruptRecordError(from + at, "not a record boundary or a damaged header");
    }
    if (at + size > bytes.length) {
      if (at > 0) break;
      // One record larger than a batch goes alone.
      bytes = readFully(segment.file, from - segment.startOffset, size);
    }
    at += size;
  }
  return { bytes: bytes.subarray(0, at), nextOffset: from + at };
}

/** Whether 8 bytes look like the start of a record or of a BLANK (a record boundary). */
export function isRecordHead(head: Uint8Array): boolean {
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const size = view.getInt32(0), magic = view.getInt32(4);
  return magic === BLANK_MAGIC
    ? size >= END_FILE_MIN_BLANK_BYTES
    : (magic === MAGIC_V1 || magic === MAGIC_V2) && size >= RECORD_BYTES_MIN;
}

/** One verified item of a replicated chunk, in log order. */
export type VerifiedItem =
  | { kind: "record"; offset: number; bytes: Uint8Array; record: MessageRecord }
  | { kind: "blank"; offset: number; bytes: Uint8Array };

export interface VerifiedChunk {
  items: VerifiedItem[];
  /** Offset after the last good item (the next segment's start after a BLANK). */
  end: number;
  /** Why verification stopped before the end of the bytes. */
  failure?: { offset: number; reason: string };
}

export interface VerifyOptions {
  segmentBytes: number;
  recordBytesMax: number;
  /** The next queue offset the local ConsumeQueue expects, undefined when it has none. */
  nextQueueOffset: (topic: string, queueId: number) => number | undefined;
}

/**
 * Splits bytes streamed from a master into records and a closing BLANK, checking each as
 * recovery does: whole, CRC-valid, PHYSICALOFFSET equal to where it lands, inside its
 * segment with room for a BLANK (same segment size on both sides), and the next queue
 * offset of its queue. Stops at the first bad item; what precedes it is good.
 */
export function verifyReplicated(
  bytes: Uint8Array,
  physicalOffset: number,
  options: VerifyOptions,
): VerifiedChunk {
  const items: VerifiedItem[] = [];
  const queueNext = new Map<string, number>();
  let at = 0;
  const stop = (reason: string): VerifiedChunk => ({
    items,
    end: physicalOffset + at,
    failure: { offset: physicalOffset + at, reason },
  });
  while (at < bytes.length) {
    const offset = physicalOffset + at;
    const segmentEnd = offset - (offset % options.segmentBytes) + options.segmentBytes;
    const result = parseRecord(bytes, at, { checkCrc: true, expectedPhysicalOffset: offset });
    if (result.kind === "blank") {
      if (offset + result.size !== segmentEnd) return stop("BLANK does not reach the segment end");
      if (at + END_FILE_MIN_BLANK_BYTES !== bytes.length) return stop("bytes follow a BLANK");
      items.push({ kind: "blank", offset, bytes: bytes.subarray(at) });
      return { items, end: segmentEnd };
    }
    if (result.kind === "end") return stop("zeros where a record should be");
    if (result.kind === "corrupt") return stop(result.reason);
    const record = result.record;
    if (result.size > options.recordBytesMax) {
      return stop("record larger than maxMessageSize allows");
    }
    if (offset + result.size + END_FILE_MIN_BLANK_BYTES > segmentEnd) {
      return stop("record does not fit its segment (mappedFileSizeCommitLog differs?)");
    }
    if (buildsConsumeQueue(record.sysFlag)) {
      const key = `${record.topic}\u0000${record.queueId}`;
      const expected = queueNext.get(key) ?? options.nextQueueOffset(record.topic, record.queueId);
      if (expected !== undefined && record.queueOffset !== expected) {
        return stop(
          `queue offset ${record.queueOffset} breaks the sequence of ${record.topic}:${record.queueId} at ${expected}`,
        );
      }
      queueNext.set(key, record.queueOffset + 1);
    }
    items.push({ kind: "record", offset, bytes: bytes.subarray(at, at + result.size), record });
    at += result.size;
  }
  return { items, end: physicalOffset + at };
}
