// A delivered message straight to the protobuf bytes of `ReceiveMessageResponse{message}`
// (the same bytes as proto-loader's serializer gives for toDeliveredMessage's object,
// field for field: delivered_wire_test.ts holds them equal). ReceiveMessage streams one
// response per message, and building the nested object, protobufjs's fromObject and
// encode and their copies of the body were a third of the broker's CPU per received
// message (bench/README.md, "gRPC receive"). Here: one buffer per message, the body
// written into it once and its MD5 taken from there.
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import { isUserPropertyName } from "../../runtime/protocol/names.ts";
import type { PopMessage, WireMessage } from "../../runtime/protocol/types.ts";
import {
  deliveryTypeOf,
  DIGEST_MD5,
  ENCODING_IDENTITY,
  fromMs,
  localQueueId,
  MessageType,
} from "./message.ts";
import type { Names } from "./resources.ts";

/** Field 2 (`message`) of ReceiveMessageResponse and of PullMessageResponse. */
const RESPONSE_MESSAGE_TAG = 0x12;

/** A small protobuf writer over a growable scratch buffer (reused: encoding is synchronous). */
class Scratch {
  buf = Buffer.allocUnsafe(4096);
  pos = 0;

  ensure(n: number) {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  /** A varint of a non-negative integer up to 2^53. */
  varint(v: number) {
    this.ensure(10);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }

  uint(tag: number, v: number) {
    this.varint(tag);
    this.varint(v);
  }

  string(tag: number, s: string) {
    this.varint(tag);
    const at = this.pos;
    if (s.length < 0x80) {
      // Short ASCII (names, ids, handles) byte by byte: cheaper than Buffer.write.
      this.ensure(1 + s.length);
      const buf = this.buf;
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[at + 1 + i] = c;
      }
      if (i === s.length) {
        buf[at] = i;
        this.pos = at + 1 + i;
        return;
      }
    }
    const n = Buffer.byteLength(s);
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos);
  }

  /** Starts a length-delimited field; end() writes its length in front. */
  open(tag: number): number {
    this.varint(tag);
    return this.pos;
  }

  end(start: number) {
    const n = this.pos - start;
    const len = varintSize(n);
    this.ensure(len);
    this.buf.copyWithin(start + len, start, this.pos);
    this.pos = start;
    this.varint(n);
    this.pos += n;
  }

  timestamp(tag: number, ms: number) {
    const t = fromMs(ms);
    const at = this.open(tag);
    this.uint(0x08, t.seconds!);
    this.uint(0x10, t.nanos!);
    this.end(at);
  }
}

function varintSize(v: number): number {
  let n = 1;
  while (v > 0x7f) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

const scratch = new Scratch();

/** The bytes of `{message: toDeliveredMessage(w, names, namespace, storeHost)}`. */
export function encodeDelivered(
  w: WireMessage | PopMessage,
  names: Names,
  namespace: string,
  storeHost: string,
): Buffer {
  const s = scratch;
  s.pos = 0;
  const topic = names.outward(w.topic, namespace);
  // Message: topic = 1, user_properties = 2, system_properties = 3 (body = 4 follows).
  let at = s.open(0x0a);
  if (topic.resourceNamespace !== undefined) s.string(0x0a, topic.resourceNamespace);
  if (topic.name !== undefined) s.string(0x12, topic.name);
  s.end(at);
  for (const k in w.properties) {
    if (!isUserPropertyName(k)) continue;
    at = s.open(0x12);
    s.string(0x0a, k);
    s.string(0x12, w.properties[k]);
    s.end(at);
  }
  // The body first into its own buffer: its MD5 goes into the system properties.
  const body = w.bodyEncoding === "base64" ? Buffer.from(w.body, "base64") : Buffer.from(w.body);
  const { type, deliverAt } = deliveryTypeOf(w);
  const sys = s.open(0x1a);
  if (w.tag !== undefined) s.string(0x0a, w.tag);
  for (const key of w.keys ?? []) s.string(0x12, key);
  s.string(0x1a, w.messageId);
  at = s.open(0x22);
  s.uint(0x08, DIGEST_MD5);
  s.string(0x12, createHash("md5").update(body).digest("hex").toUpperCase());
  s.end(at);
  s.uint(0x28, ENCODING_IDENTITY);
  s.uint(0x30, type);
  s.timestamp(0x3a, w.bornTimestamp);
  s.string(0x42, storeHost);
  s.timestamp(0x4a, w.storeTimestamp);
  s.string(0x52, storeHost);
  if (type === MessageType.DELAY) s.timestamp(0x5a, deliverAt);
  if ("receiptHandle" in w) s.string(0x62, w.receiptHandle);
  s.uint(0x68, localQueueId(w.queueId));
  s.uint(0x70, w.queueOffset);
  s.uint(16 << 3, w.reconsumeTimes + 1); // delivery_attempt = 16
  if (w.shardingKey !== undefined) s.string(17 << 3 | 2, w.shardingKey); // message_group = 17
  s.end(sys);
  // body = 4, then the whole Message as field 2 of the response.
  s.varint(0x22);
  s.varint(body.length);
  const messageLen = s.pos + body.length;
  const head = 1 + varintSize(messageLen);
  const out = Buffer.allocUnsafe(head + messageLen);
  out[0] = RESPONSE_MESSAGE_TAG;
  let p = 1;
  for (let v = messageLen;; v = Math.floor(v / 128)) {
    if (v <= 0x7f) {
      out[p++] = v;
      break;
    }
    out[p++] = (v % 128) | 0x80;
  }
  out.set(s.buf.subarray(0, s.pos), p);
  out.set(body, p + s.pos);
  return out;
}
