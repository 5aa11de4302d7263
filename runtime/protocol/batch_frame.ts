// The binary batch frame: a produce batch's request body as bytes instead of base64 in JSON
// (POST /v1/topics/{topic}/messages/batch with Content-Type BATCH_FRAME_TYPE). The
// functions' cluster router sends it to the brokers (issue #26, bench/README.md "The hop,
// round 3"): no base64 and no JSON on either side, and the broker takes each body as a view
// of the request, without a copy. The SDK writes it (client/batch_frame.ts); this file reads
// it and is the format's definition:
//
//   frame  = "EMQB" version:u8(=1) count:u32 item{count}      (nothing after the last item)
//   item   = fields:u16 body:bytes [tag:str] [keys:u32 str{n}] [shardingKey:str]
//            [queueId:f64] [delayLevel:f64] [delayMs:f64] [deliverAt:f64]
//            [properties:u32 (name:str value:str){n}] [idempotencyKey:str]
//            [contentType:str] [messageId:str]
//   bytes  = length:u32 octets;  str = bytes holding UTF-8
//
// Integers are big-endian; f64 is an IEEE 754 double, big-endian. `fields` has bit i set when
// the i-th optional field (tag = bit 0 … messageId = bit 10) is present, in that order.
// A frame that does not follow this (wrong magic or version, an unknown field bit, a length
// past the end, bytes after the last item, text that is not UTF-8) is refused whole with
// INVALID_PARAMETER and nothing is stored. The values themselves (a tag too long, a delay
// that is not a whole number) are checked per item, as for a JSON item, so each item still
// succeeds or fails alone.
import { BrokerError } from "./errors.ts";
import type { ProduceMessage } from "./types.ts";

export const BATCH_FRAME_TYPE = "application/vnd.edgemq.batch";
export const BATCH_FRAME_MAGIC = [0x45, 0x4d, 0x51, 0x42]; // "EMQB"
export const BATCH_FRAME_VERSION = 1;

/** The optional fields, in frame order: bit i of `fields` is FRAME_FIELDS[i]. */
export const FRAME_FIELDS = [
  "tag",
  "keys",
  "shardingKey",
  "queueId",
  "delayLevel",
  "delayMs",
  "deliverAt",
  "properties",
  "idempotencyKey",
  "contentType",
  "messageId",
] as const;

/** One item as the frame carries it: a ProduceMessage whose values are not checked yet
 * (functions/frame_input.ts checks them as for a JSON item). */
export type FrameItem = ProduceMessage;

const KNOWN_FIELDS = (1 << FRAME_FIELDS.length) - 1;
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function malformed(why: string): never {
  throw new BrokerError("INVALID_PARAMETER", `Cannot read batch frame: ${why}`);
}

/** A reader over the frame that refuses to read past its end. */
class Cursor {
  at = 0;
  readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number, what: string): void {
    if (n > this.bytes.length - this.at) {
      malformed(`${what} at byte ${this.at} runs past the end (${this.bytes.length} bytes)`);
    }
  }
  u16(what: string): number {
    this.need(2, what);
    const v = this.view.getUint16(this.at);
    this.at += 2;
    return v;
  }
  u32(what: string): number {
    this.need(4, what);
    const v = this.view.getUint32(this.at);
    this.at += 4;
    return v;
  }
  f64(what: string): number {
    this.need(8, what);
    const v = this.view.getFloat64(this.at);
    this.at += 8;
    return v;
  }
  /** A length-prefixed run of bytes, as a view of the frame (no copy). */
  bytesOf(what: string): Uint8Array {
    const n = this.u32(what);
    this.need(n, what);
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  str(what: string): string {
    const b = this.bytesOf(what);
    if (b.length === 0) return "";
    try {
      return UTF8.decode(b);
    } catch {
      return malformed(`${what} at byte ${this.at - b.length} is not UTF-8`);
    }
  }
  /** A count of following entries, each at least `minBytes` long: a count the rest of the
   * frame cannot hold is refused before anything is allocated for it. */
  count(what: string, minBytes: number): number {
    const n = this.u32(what);
    if (n * minBytes > this.bytes.length - this.at) {
      malformed(`${what} ${n} cannot fit in the ${this.bytes.length - this.at} bytes left`);
    }
    return n;
  }
}

/** The items of a batch frame, bodies as views of `frame`; a BrokerError
 * (INVALID_PARAMETER) when the frame is malformed. `itemsMax` is checked before the items
 * are read (TOO_MANY_ITEMS, as for a JSON batch). */
export function decodeBatchFrame(frame: Uint8Array, itemsMax: number): FrameItem[] {
  const c = new Cursor(frame);
  c.need(5, "the header");
  for (let i = 0; i < 4; i++) {
    if (frame[i] !== BATCH_FRAME_MAGIC[i]) malformed("it does not start with EMQB");
  }
  if (frame[4] !== BATCH_FRAME_VERSION) {
    malformed(`version ${frame[4]} is not ${BATCH_FRAME_VERSION}`);
  }
  c.at = 5;
  const count = c.count("item count", 6);
  if (count === 0 || count > itemsMax) {
    throw new BrokerError(
      "TOO_MANY_ITEMS",
      `Cannot take ${count} messages in one batch: 1-${itemsMax} (batchItemsMax)`,
    );
  }
  const items: FrameItem[] = new Array(count);
  for (let i = 0; i < count; i++) items[i] = readItem(c, i);
  if (c.at !== frame.length) malformed(`${frame.length - c.at} bytes after the last item`);
  return items;
}

function readItem(c: Cursor, index: number): FrameItem {
  const at = `item ${index}`;
  const fields = c.u16(`${at} fields`);
  if ((fields & ~KNOWN_FIELDS) !== 0) {
    malformed(`${at} has unknown field bits ${(fields & ~KNOWN_FIELDS).toString(2)}`);
  }
  const item: FrameItem = { body: c.bytesOf(`${at} body`) };
  if (fields === 0) return item;
  if (fields & 1) item.tag = c.str(`${at} tag`);
  if (fields & 2) {
    const n = c.count(`${at} key count`, 4);
    const keys: string[] = new Array(n);
    for (let k = 0; k < n; k++) keys[k] = c.str(`${at} key`);
    item.keys = keys;
  }
  if (fields & 4) item.shardingKey = c.str(`${at} shardingKey`);
  if (fields & 8) item.queueId = c.f64(`${at} queueId`);
  if (fields & 16) item.delayLevel = c.f64(`${at} delayLevel`);
  if (fields & 32) item.delayMs = c.f64(`${at} delayMs`);
  if (fields & 64) item.deliverAt = c.f64(`${at} deliverAt`);
  if (fields & 128) {
    const n = c.count(`${at} property count`, 8);
    const props: Record<string, string> = Object.create(null);
    for (let p = 0; p < n; p++) {
      const name = c.str(`${at} property name`);
      props[name] = c.str(`${at} property ${name}`);
    }
    item.properties = props;
  }
  if (fields & 256) item.idempotencyKey = c.str(`${at} idempotencyKey`);
  if (fields & 512) item.contentType = c.str(`${at} contentType`);
  if (fields & 1024) item.messageId = c.str(`${at} messageId`);
  return item;
}
