// The binary batch frame (format: runtime/protocol/batch_frame.ts on the broker, which reads
// it): a produce batch as bytes, for `MqClient` with `binaryBatches` (the functions' link to
// their brokers). No base64 and no JSON: each body is copied once into the frame.
import type { ProduceMessage } from "./types.ts";
import { jsonBody } from "./body.ts";

export const BATCH_FRAME_TYPE = "application/vnd.edgemq.batch";
const MAGIC = [0x45, 0x4d, 0x51, 0x42]; // "EMQB"
const VERSION = 1;

type Item = Omit<ProduceMessage, "body"> & { body: string | Uint8Array };

const enc = new TextEncoder();

/** Bytes a string can take as UTF-8, at most (3 per UTF-16 unit), plus its length. */
const strMax = (s: string) => 4 + s.length * 3;

function sizeBound(m: Item): number {
  let n = 2 + 4 + (typeof m.body === "string" ? m.body.length * 3 : m.body.byteLength);
  if (m.tag !== undefined) n += strMax(m.tag);
  if (m.keys !== undefined) { for (const k of m.keys) n += strMax(k); }
  if (m.keys !== undefined) n += 4;
  if (m.shardingKey !== undefined) n += strMax(m.shardingKey);
  n += 32; // the four numbers, each f64
  if (m.properties !== undefined) {
    n += 4;
    for (const name in m.properties) n += strMax(name) + strMax(m.properties[name]);
  }
  if (m.idempotencyKey !== undefined) n += strMax(m.idempotencyKey);
  if (m.contentType !== undefined) n += strMax(m.contentType);
  if (m.messageId !== undefined) n += strMax(m.messageId);
  return n;
}

/** The frame of `messages`, in order. */
export function encodeBatchFrame(messages: Item[]): Uint8Array {
  let bound = 9;
  for (const m of messages) bound += sizeBound(m);
  const out = new Uint8Array(bound);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  out[4] = VERSION;
  view.setUint32(5, messages.length);
  let at = 9;
  const str = (s: string) => {
    const { written } = enc.encodeInto(s, out.subarray(at + 4));
    view.setUint32(at, written);
    at += 4 + written;
  };
  const f64 = (v: number) => {
    view.setFloat64(at, v);
    at += 8;
  };
  const u32 = (v: number) => {
    view.setUint32(at, v);
    at += 4;
  };
  for (const m of messages) {
    let fields = 0;
    if (m.tag !== undefined) fields |= 1;
    if (m.keys !== undefined) fields |= 2;
    if (m.shardingKey !== undefined) fields |= 4;
    if (m.queueId !== undefined) fields |= 8;
    if (m.delayLevel !== undefined) fields |= 16;
    if (m.delayMs !== undefined) fields |= 32;
    if (m.deliverAt !== undefined) fields |= 64;
    if (m.properties !== undefined) fields |= 128;
    if (m.idempotencyKey !== undefined) fields |= 256;
    if (m.contentType !== undefined) fields |= 512;
    if (m.messageId !== undefined) fields |= 1024;
    view.setUint16(at, fields);
    at += 2;
    if (typeof m.body === "string") str(m.body);
    else {
      u32(m.body.byteLength);
      out.set(m.body, at);
      at += m.body.byteLength;
    }
    if (m.tag !== undefined) str(m.tag);
    if (m.keys !== undefined) {
      u32(m.keys.length);
      for (const k of m.keys) str(k);
    }
    if (m.shardingKey !== undefined) str(m.shardingKey);
    if (m.queueId !== undefined) f64(m.queueId);
    if (m.delayLevel !== undefined) f64(m.delayLevel);
    if (m.delayMs !== undefined) f64(m.delayMs);
    if (m.deliverAt !== undefined) f64(m.deliverAt);
    if (m.properties !== undefined) {
      const names = Object.keys(m.properties);
      u32(names.length);
      for (const name of names) {
        str(name);
        str(m.properties[name]);
      }
    }
    if (m.idempotencyKey !== undefined) str(m.idempotencyKey);
    if (m.contentType !== undefined) str(m.contentType);
    if (m.messageId !== undefined) str(m.messageId);
  }
  return out.subarray(0, at);
}

/** produceBatch's request: the frame, or `{messages}` in JSON with bodies as base64. */
export function batchBody(messages: Item[], binary: boolean) {
  return binary
    ? { headers: { "content-type": BATCH_FRAME_TYPE }, body: encodeBatchFrame(messages) }
    : { json: { messages: messages.map(jsonBody) } };
}
