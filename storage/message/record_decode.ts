// Decoding RocketMQ's CommitLog record (layout: record.ts): parseRecord() tells a record
// from a BLANK, the end of written data and damage, and decodes the fields as views of the
// bytes read (no copy of the body).
import {
  BLANK_MAGIC,
  bodyCrc32,
  BORN_HOST_AT,
  END_FILE_MIN_BLANK_BYTES,
  getLong,
  MAGIC_V1,
  MAGIC_V2,
  type MessageRecord,
  NAME_VALUE_SEPARATOR,
  PHYSICAL_OFFSET_AT,
  PROPERTY_SEPARATOR,
  QUEUE_OFFSET_AT,
  storeTimestampAt,
  SYSFLAG_STORE_HOST_V6,
} from "./record.ts";

const decoder = new TextDecoder("utf-8", { fatal: false });

/** parseRecord's reason for a whole record whose body fails its CRC. */
export const BODY_CRC_MISMATCH = "body CRC mismatch";

export type ParseResult =
  | { kind: "record"; size: number; record: MessageRecord }
  | { kind: "blank"; size: number }
  | { kind: "end" } // zero TOTALSIZE: no record was ever written here
  | { kind: "corrupt"; reason: string };

/**
 * Parses the record at `at` in `bytes` (which must hold the whole record for kind
 * "record"). With `checkCrc` the body CRC is verified. `expectedPhysicalOffset`, when
 * given, must match the record's own PHYSICALOFFSET (catches stale or misplaced bytes).
 */
export function parseRecord(
  bytes: Uint8Array,
  at: number,
  options: { checkCrc: boolean; expectedPhysicalOffset?: number },
): ParseResult {
  if (bytes.length - at < 8) {
    return bytes.length - at >= 4 && readInt(bytes, at) === 0
      ? { kind: "end" }
      : { kind: "corrupt", reason: "short header" };
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, bytes.length - at);
  const size = view.getInt32(0);
  const magic = view.getInt32(4);
  if (size === 0 && magic === 0) return { kind: "end" };
  if (magic === BLANK_MAGIC) {
    return size >= END_FILE_MIN_BLANK_BYTES
      ? { kind: "blank", size }
      : { kind: "corrupt", reason: "bad blank size" };
  }
  if (magic !== MAGIC_V1 && magic !== MAGIC_V2) {
    return { kind: "corrupt", reason: "bad magic code" };
  }
  if (size < 91 || size > view.byteLength) {
    return { kind: "corrupt", reason: "bad or truncated total size" };
  }
  try {
    const record = decodeFields(bytes, view, at, size, magic);
    if (record.totalSize !== size) return { kind: "corrupt", reason: "length fields disagree" };
    if (
      options.expectedPhysicalOffset !== undefined &&
      record.physicalOffset !== options.expectedPhysicalOffset
    ) return { kind: "corrupt", reason: "physical offset mismatch" };
    if (options.checkCrc && bodyCrc32(record.body) !== record.bodyCrc) {
      return { kind: "corrupt", reason: BODY_CRC_MISMATCH };
    }
    return { kind: "record", size, record };
  } catch {
    return { kind: "corrupt", reason: "fields run past the record" };
  }
}

/**
 * The fields of the `size`-byte record at `base` in `bytes`; `view` starts at `base`.
 * Body and host addresses are views of `bytes`. Field offsets are computed inline: host
 * tuples, a second DataView and a subarray per record cost about a third of a record's
 * decoding on Deno.
 */
function decodeFields(
  bytes: Uint8Array,
  view: DataView,
  base: number,
  size: number,
  magic: number,
): MessageRecord {
  const sysFlag = view.getInt32(36);
  const timestampAt = storeTimestampAt(sysFlag);
  const bornPortAt = timestampAt - 4;
  const bornHost = {
    ip: bytes.subarray(base + BORN_HOST_AT, base + bornPortAt),
    port: view.getInt32(bornPortAt),
  };
  const storeTimestamp = getLong(view, timestampAt);
  const storeIpAt = timestampAt + 8;
  const storePortAt = storeIpAt + ((sysFlag & SYSFLAG_STORE_HOST_V6) !== 0 ? 16 : 4);
  const storeHost = {
    ip: bytes.subarray(base + storeIpAt, base + storePortAt),
    port: view.getInt32(storePortAt),
  };
  let at = storePortAt + 4;
  const reconsumeTimes = view.getInt32(at);
  const preparedTransactionOffset = getLong(view, at + 4);
  at += 12;
  const bodyLength = view.getInt32(at);
  if (bodyLength < 0 || at + 4 + bodyLength > size) throw new RangeError("body");
  const body = bytes.subarray(base + at + 4, base + at + 4 + bodyLength);
  at += 4 + bodyLength;
  const topicLength = magic === MAGIC_V2 ? view.getInt16(at) : view.getInt8(at);
  at += magic === MAGIC_V2 ? 2 : 1;
  if (topicLength <= 0 || at + topicLength > size) throw new RangeError("topic");
  const topic = decodeTopic(bytes, base + at, topicLength);
  at += topicLength;
  const propsLength = view.getInt16(at);
  if (propsLength < 0 || at + 2 + propsLength !== size) throw new RangeError("props");
  const properties = decodeProperties(
    bytes.subarray(base + at + 2, base + at + 2 + propsLength),
  );
  return {
    totalSize: at + 2 + propsLength,
    magic,
    bodyCrc: view.getInt32(8),
    queueId: view.getInt32(12),
    flag: view.getInt32(16),
    queueOffset: getLong(view, QUEUE_OFFSET_AT),
    physicalOffset: getLong(view, PHYSICAL_OFFSET_AT),
    sysFlag,
    bornTimestamp: getLong(view, 40),
    bornHost,
    storeTimestamp,
    storeHost,
    reconsumeTimes,
    preparedTransactionOffset,
    body,
    topic,
    properties,
  };
}

export function decodeProperties(bytes: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  if (bytes.length === 0) return out;
  // Pairs found by indexOf in the decoded text: properties are two thirds of a record's
  // decoding on Deno, and split() added an array and a string per pair to them.
  const text = decoder.decode(bytes);
  // With the lenient decoder every byte became one character (ASCII, or a lone invalid
  // byte as U+FFFD) exactly when the lengths agree: then character offsets are byte offsets.
  const oneCharPerByte = text.length === bytes.length;
  const end = text.length;
  for (let from = 0; from < end;) {
    let stop = text.indexOf(PROPERTY_SEPARATOR, from);
    if (stop < 0) stop = end;
    // As MessageDecoder.string2messageProperties: skip short or separator-less pairs.
    if (stop - from >= 3) {
      const at = text.indexOf(NAME_VALUE_SEPARATOR, from);
      if (at > from && at < stop) {
        // A slice of 13 characters or more is a view of the whole text (V8's SlicedString),
        // and one in an object sends Deno's JSON.stringify off its fast path (bench/README.md
        // has the figures). Such values are decoded on their own.
        const value = stop - at > 13 && oneCharPerByte
          ? decoder.decode(bytes.subarray(at + 1, stop))
          : text.slice(at + 1, stop);
        out.set(text.slice(from, at), value);
      }
    }
    from = stop + 1;
  }
  return out;
}

/** The last topic decoded: a pull's records mostly share one, so its bytes are compared, not decoded. */
let lastTopic = "";
let lastTopicBytes = new Uint8Array(0);

function decodeTopic(bytes: Uint8Array, at: number, length: number): string {
  const last = lastTopicBytes;
  if (last.length === length) {
    let i = 0;
    while (i < length && bytes[at + i] === last[i]) i++;
    if (i === length) return lastTopic;
  }
  lastTopicBytes = bytes.slice(at, at + length);
  return lastTopic = decoder.decode(lastTopicBytes);
}

function readInt(bytes: Uint8Array, at: number): number {
  return ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) | 0;
}
