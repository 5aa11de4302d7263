// RocketMQ's CommitLog record, byte for byte (reference/rocketmq.md §1). Big-endian.
//
//  off  field                        width
//    0  TOTALSIZE                    4
//    4  MAGICCODE (V1 0xDAA320A7)    4     V2 0xDAA320AB when the topic needs > 127 bytes
//    8  BODYCRC                      4     crc32(body) & 0x7FFFFFFF, as UtilAll.crc32
//   12  QUEUEID                      4
//   16  FLAG                         4
//   20  QUEUEOFFSET                  8
//   28  PHYSICALOFFSET               8
//   36  SYSFLAG                      4
//   40  BORNTIMESTAMP                8
//   48  BORNHOST                     8|20  IPv4 (4) or IPv6 (16) + int port
//    .  STORETIMESTAMP               8
//    .  STOREHOST                    8|20
//    .  RECONSUMETIMES               4
//    .  PREPARED TRANSACTION OFFSET  8
//    .  bodyLen int + body
//    .  topicLen byte (V1) | short (V2) + topic
//    .  propsLen short + props       name\u0001value\u0002 per pair
//
// IPv4 and V1: 91 + body + topic + props bytes.
import { crc32 } from "../crc32.ts";
import { assert, StoreError } from "../errors.ts";

export const MAGIC_V1 = 0xDAA320A7 | 0; // -626843481, MessageDecoder.MESSAGE_MAGIC_CODE
export const MAGIC_V2 = 0xDAA320AB | 0; // -626843477, MESSAGE_MAGIC_CODE_V2
export const BLANK_MAGIC = 0xCBD43194 | 0; // -875286124, CommitLog.BLANK_MAGIC_CODE
/** A BLANK marker: int remaining + int magic; a segment keeps room for it. */
export const END_FILE_MIN_BLANK_BYTES = 8;
export const PROPERTIES_BYTES_MAX = 32767; // Short.MAX_VALUE
export const TOPIC_BYTES_MAX_V1 = 127; // V1 topic length is a signed byte
export const TOPIC_BYTES_MAX = 255; // retry and DLQ topics may use V2 up to 255
export const NAME_VALUE_SEPARATOR = "\u0001";
export const PROPERTY_SEPARATOR = "\u0002";

export const SYSFLAG_BORN_HOST_V6 = 0x10;
export const SYSFLAG_STORE_HOST_V6 = 0x20;
export const SYSFLAG_TRANSACTION_MASK = 0xC;

const TOPIC_PATTERN = /^[%|a-zA-Z0-9_-]+$/;
export const QUEUE_OFFSET_AT = 20;
export const PHYSICAL_OFFSET_AT = 28;
export const BORN_HOST_AT = 48;
const encoder = new TextEncoder();

export interface HostAddress {
  /** 4 bytes (IPv4) or 16 bytes (IPv6). */
  ip: Uint8Array;
  port: number;
}

export interface MessageInput {
  topic: string;
  queueId: number;
  body: Uint8Array;
  flag?: number;
  properties?: Map<string, string>;
  bornTimestamp: number;
  bornHost: HostAddress;
  storeHost: HostAddress;
  reconsumeTimes?: number;
  preparedTransactionOffset?: number;
  /** Transaction type bits etc.; host bits are set by the encoder. */
  sysFlag?: number;
}

export interface MessageRecord {
  totalSize: number;
  magic: number;
  bodyCrc: number;
  queueId: number;
  flag: number;
  queueOffset: number;
  physicalOffset: number;
  sysFlag: number;
  bornTimestamp: number;
  bornHost: HostAddress;
  storeTimestamp: number;
  storeHost: HostAddress;
  reconsumeTimes: number;
  preparedTransactionOffset: number;
  body: Uint8Array;
  topic: string;
  properties: Map<string, string>;
}

export function bodyCrc32(body: Uint8Array): number {
  return (crc32(body) & 0x7FFFFFFF) | 0;
}

/** Java String.hashCode: 31-polynomial over UTF-16 code units with int32 overflow. */
export { javaStringHashCode } from "./java_hash.ts";

export function validateTopic(topic: string): Uint8Array {
  checkTopic(topic);
  return encoder.encode(topic);
}

/** Throws TOPIC_ILLEGAL unless `topic` is 1-127 (retry, DLQ: 255) of [%|a-zA-Z0-9_-]. */
function checkTopic(topic: string): void {
  // The pattern admits ASCII only, so characters and UTF-8 bytes count alike.
  const internal = topic.startsWith("%RETRY%") || topic.startsWith("%DLQ%");
  const max = internal ? TOPIC_BYTES_MAX : TOPIC_BYTES_MAX_V1;
  if (topic.length === 0 || topic.length > max || !TOPIC_PATTERN.test(topic)) {
    throw new StoreError(
      "TOPIC_ILLEGAL",
      `Cannot use topic name as it must be 1-${max} characters of [%|a-zA-Z0-9_-]: ${
        JSON.stringify(topic.slice(0, 300))
      }`,
    );
  }
}

export function encodeProperties(properties: Map<string, string> | undefined): Uint8Array {
  if (!properties || properties.size === 0) return new Uint8Array(0);
  const measured = measureProperties(properties);
  if (typeof measured !== "number") return measured;
  const out = new Uint8Array(measured);
  writeProperties(out, 0, properties);
  return out;
}

/** Whether `text` holds a separator (-1), only ASCII (0), or other characters too (1). */
function scanText(text: string): number {
  let wide = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 1 || c === 2) return -1;
    if (c > 0x7f) wide = 1;
  }
  return wide;
}

/**
 * The properties checked and measured in one pass over their characters: the byte length
 * of their NAME\u0001VALUE\u0002 pairs when all are ASCII (encodeRecord then writes them
 * from the map, one byte per character: no text built, no second scan), else their UTF-8
 * bytes. Building the text and testing it cost ~0.5 µs a put on Bun (bench/README.md,
 * "Produce path (issue #27, round 4…)").
 */
function measureProperties(properties: Map<string, string>): number | Uint8Array {
  let length = 0;
  let wide = false;
  for (const [name, value] of properties) {
    const n = scanText(name), v = scanText(value);
    if (name.length === 0 || n < 0 || v < 0) {
      throw new StoreError(
        "PROPERTY_ILLEGAL",
        `Cannot store property ${
          JSON.stringify(name.slice(0, 100))
        } as names must be non-empty and names and values must not contain \\u0001 or \\u0002`,
      );
    }
    if (n > 0 || v > 0) wide = true;
    length += name.length + value.length + 2;
  }
  let measured: number | Uint8Array = length;
  if (wide) {
    let text = "";
    for (const [name, value] of properties) {
      text += name + NAME_VALUE_SEPARATOR + value + PROPERTY_SEPARATOR;
    }
    measured = encoder.encode(text);
    length = measured.length;
  }
  if (length > PROPERTIES_BYTES_MAX) {
    throw new StoreError(
      "PROPERTIES_SIZE_EXCEEDED",
      `Cannot store properties as they encode to ${length} > ${PROPERTIES_BYTES_MAX} bytes`,
    );
  }
  return measured;
}

/** Writes ASCII properties (measureProperties said so) as NAME\u0001VALUE\u0002 pairs. */
function writeProperties(target: Uint8Array, at: number, properties: Map<string, string>) {
  let p = at;
  for (const [name, value] of properties) {
    p = writeAscii(target, p, name);
    target[p++] = 1;
    p = writeAscii(target, p, value);
    target[p++] = 2;
  }
  return p;
}

function checkHost(host: HostAddress, what: string) {
  if (
    (host.ip.length !== 4 && host.ip.length !== 16) || !Number.isInteger(host.port) ||
    host.port < 0 || host.port > 65535
  ) {
    throw new StoreError(
      "HOST_ILLEGAL",
      `Cannot encode ${what} as it is not an IPv4/IPv6 address and port`,
    );
  }
}

/**
 * A validated and measured message, not yet encoded: the CommitLog encodes it straight into
 * its write buffer (encodeRecord), so a put allocates no record array and no second copy.
 * `bytes` encodes it on its own, once (tests; records too large for the write buffer).
 */
export class PreparedRecord {
  /** TOTALSIZE: the encoded length. */
  readonly size: number;
  readonly topic: string;
  readonly queueId: number;
  readonly sysFlag: number;
  readonly properties: Map<string, string>;
  readonly input: MessageInput;
  /** The properties' UTF-8 bytes when not all ASCII; else encodeRecord writes them from
   * `properties`, one byte per character. */
  readonly propsUtf8: Uint8Array | undefined;
  readonly propsBytes: number;

  constructor(
    input: MessageInput,
    sysFlag: number,
    properties: Map<string, string>,
    props: number | Uint8Array,
  ) {
    this.input = input;
    this.topic = input.topic;
    this.queueId = input.queueId;
    this.sysFlag = sysFlag;
    this.properties = properties;
    this.propsUtf8 = typeof props === "number" ? undefined : props;
    this.propsBytes = typeof props === "number" ? props : props.length;
    const v2 = input.topic.length > TOPIC_BYTES_MAX_V1;
    this.size = 84 + (input.bornHost.ip.length === 16 ? 12 : 0) +
      (input.storeHost.ip.length === 16 ? 12 : 0) + 4 + input.body.length + (v2 ? 2 : 1) +
      input.topic.length + 2 + this.propsBytes;
  }

  #bytes: Uint8Array | undefined;

  /** The record in an array of its own, encoded on first use (offsets and store time zero). */
  get bytes(): Uint8Array {
    if (this.#bytes === undefined) {
      this.#bytes = new Uint8Array(this.size);
      encodeRecord(this, this.#bytes, new DataView(this.#bytes.buffer), 0);
    }
    return this.#bytes;
  }
}

export function prepareRecord(input: MessageInput, maxMessageSize: number): PreparedRecord {
  if (input.body.length > maxMessageSize) {
    throw new StoreError(
      "MESSAGE_TOO_LARGE",
      `Cannot append message as body exceeds maxMessageSize: ${input.body.length} > ${maxMessageSize} bytes`,
    );
  }
  // TOPIC_PATTERN admits ASCII only, so the topic's length in characters is its length in
  // bytes, and it is written byte by byte (no TextEncoder per put).
  checkTopic(input.topic);
  if (!Number.isInteger(input.queueId) || input.queueId < 0 || input.queueId > 0x7fffffff) {
    throw new StoreError(
      "QUEUE_ID_ILLEGAL",
      `Cannot append message as queueId is invalid: ${input.queueId}`,
    );
  }
  checkHost(input.bornHost, "born host");
  checkHost(input.storeHost, "store host");
  const properties = input.properties ?? new Map<string, string>();
  let sysFlag = (input.sysFlag ?? 0) & ~(SYSFLAG_BORN_HOST_V6 | SYSFLAG_STORE_HOST_V6);
  if (input.bornHost.ip.length === 16) sysFlag |= SYSFLAG_BORN_HOST_V6;
  if (input.storeHost.ip.length === 16) sysFlag |= SYSFLAG_STORE_HOST_V6;
  return new PreparedRecord(
    input,
    sysFlag,
    properties,
    properties.size === 0 ? 0 : measureProperties(properties),
  );
}

/**
 * Writes `record` at `at` in `target` (`view` spans the same buffer), which must have
 * room for record.size bytes. QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP are left
 * for stampRecord(); everything else is final.
 */
export function encodeRecord(
  record: PreparedRecord,
  target: Uint8Array,
  view: DataView,
  at: number,
): void {
  const input = record.input;
  const topic = input.topic;
  const v2 = topic.length > TOPIC_BYTES_MAX_V1;
  view.setInt32(at, record.size);
  view.setInt32(at + 4, v2 ? MAGIC_V2 : MAGIC_V1);
  view.setInt32(at + 8, bodyCrc32(input.body));
  view.setInt32(at + 12, input.queueId);
  view.setInt32(at + 16, input.flag ?? 0);
  setLong(view, at + QUEUE_OFFSET_AT, 0);
  setLong(view, at + PHYSICAL_OFFSET_AT, 0);
  view.setInt32(at + 36, record.sysFlag);
  setLong(view, at + 40, input.bornTimestamp);
  let p = writeHost(target, view, at + BORN_HOST_AT, input.bornHost);
  setLong(view, p, 0); // STORETIMESTAMP
  p = writeHost(target, view, p + 8, input.storeHost);
  view.setInt32(p, input.reconsumeTimes ?? 0);
  setLong(view, p + 4, input.preparedTransactionOffset ?? 0);
  p += 12;
  view.setInt32(p, input.body.length);
  target.set(input.body, p + 4);
  p += 4 + input.body.length;
  if (v2) {
    view.setInt16(p, topic.length);
    p += 2;
  } else {
    view.setInt8(p, topic.length);
    p += 1;
  }
  p = writeAscii(target, p, topic);
  view.setInt16(p, record.propsBytes);
  const utf8 = record.propsUtf8;
  if (utf8 === undefined) p = writeProperties(target, p + 2, record.properties);
  else {
    target.set(utf8, p + 2);
    p += 2 + record.propsBytes;
  }
  assert(p === at + record.size, "record length fields disagree");
}

function writeAscii(target: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) target[at + i] = text.charCodeAt(i);
  return at + text.length;
}

/** Offset of STORETIMESTAMP within a record with the given sysFlag. */
export function storeTimestampAt(sysFlag: number): number {
  return BORN_HOST_AT + ((sysFlag & SYSFLAG_BORN_HOST_V6) ? 20 : 8);
}

/** Sets the fields the append decides, in a record already copied into `target`. */
export function stampRecord(
  target: DataView,
  at: number,
  queueOffset: number,
  physicalOffset: number,
  storeTimestamp: number,
) {
  setLong(target, at + QUEUE_OFFSET_AT, queueOffset);
  setLong(target, at + PHYSICAL_OFFSET_AT, physicalOffset);
  setLong(target, at + storeTimestampAt(target.getInt32(at + 36)), storeTimestamp);
}

function writeHost(bytes: Uint8Array, view: DataView, at: number, host: HostAddress): number {
  bytes.set(host.ip, at);
  view.setInt32(at + host.ip.length, host.port);
  return at + host.ip.length + 4;
}

const TWO_32 = 2 ** 32;

/** Writes a non-negative safe integer as a big-endian int64 without BigInt. */
export function setLong(view: DataView, at: number, value: number) {
  const hi = Math.floor(value / TWO_32);
  view.setInt32(at, hi);
  view.setUint32(at + 4, value - hi * TWO_32);
}

export function getLong(view: DataView, at: number): number {
  return view.getInt32(at) * TWO_32 + view.getUint32(at + 4);
}
