// Messages between RocketMQ 5's protobuf model and ours (docs/grpc.md, "System
// properties"; reference/rocketmq-grpc.md §6): a sent `Message` to a ProduceMessage, a
// stored WireMessage/PopMessage to a delivered `Message`.
import { splitQueueId } from "../../runtime/protocol/cluster_types.ts";
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import { isUserPropertyName } from "../../runtime/protocol/names.ts";
import type { PopMessage, ProduceMessage, WireMessage } from "../../runtime/protocol/types.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { type Names, type Resource } from "./resources.ts";

/** A queue's id inside its broker group, as QueryRoute lists it (route.ts): the global id
 * without its slot (the same on a single broker). */
export const localQueueId = (queueId: number) => splitQueueId(queueId).localQueueId;

export const MessageType = { NORMAL: 1, FIFO: 2, DELAY: 3, TRANSACTION: 4 } as const;
/** apache.rocketmq.v2.DigestType */
export const DIGEST_MD5 = 2;
/** apache.rocketmq.v2.Encoding */
export const ENCODING_IDENTITY = 1;
const ENCODING_GZIP = 2;
/** The stored property that holds a timed message's delivery time (RocketMQ's). */
const TIMER_DELIVER_MS = "TIMER_DELIVER_MS";

export interface Timestamp {
  seconds?: number;
  nanos?: number;
}

export function toMs(t: Timestamp | undefined | null): number | undefined {
  if (!t) return undefined;
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

export function fromMs(ms: number): Timestamp {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

/** A sent message (one `SendMessageRequest.messages` entry), as the proto loader gives it. */
export interface SentMessage {
  topic?: Resource;
  userProperties?: Record<string, string>;
  systemProperties?: {
    tag?: string;
    keys?: string[];
    messageId?: string;
    bodyEncoding?: number;
    messageType?: number;
    deliveryTimestamp?: Timestamp;
    messageGroup?: string;
  };
  body?: Uint8Array;
}

/** A sent message as ours; FIFO's message group becomes the sharding key, DELAY's
 * delivery timestamp the deliverAt. */
export function toProduceMessage(m: SentMessage): ProduceMessage {
  const sys = m.systemProperties ?? {};
  if (sys.bodyEncoding === ENCODING_GZIP) {
    throw new BrokerError("INVALID_PARAMETER", "Cannot accept GZIP bodies: send them as they are");
  }
  const out: ProduceMessage = { body: m.body ?? new Uint8Array(0) };
  if (sys.messageId) out.messageId = sys.messageId;
  if (sys.tag !== undefined && sys.tag !== "") out.tag = sys.tag;
  if (sys.keys?.length) out.keys = sys.keys;
  if (sys.messageGroup !== undefined && sys.messageGroup !== "") out.shardingKey = sys.messageGroup;
  const deliverAt = toMs(sys.deliveryTimestamp);
  if (deliverAt !== undefined) out.deliverAt = deliverAt;
  if (m.userProperties && Object.keys(m.userProperties).length > 0) {
    out.properties = m.userProperties;
  }
  return out;
}

/** FIFO when it has a message group, DELAY when it carries a delivery time, else NORMAL. */
export function deliveryTypeOf(w: WireMessage): { type: number; deliverAt: number } {
  const deliverAt = Number(w.properties[TIMER_DELIVER_MS] ?? NaN);
  const type = w.shardingKey !== undefined
    ? MessageType.FIFO
    : Number.isFinite(deliverAt)
    ? MessageType.DELAY
    : MessageType.NORMAL;
  return { type, deliverAt };
}

/** A delivered message. `receiptHandle` only for POP; `queueOffset` as stored. */
export function toDeliveredMessage(
  w: WireMessage | PopMessage,
  names: Names,
  namespace: string,
  storeHost: string,
): Record<string, unknown> {
  const body = w.bodyEncoding === "base64" ? Buffer.from(w.body, "base64") : Buffer.from(w.body);
  const userProperties: Record<string, string> = {};
  for (const k in w.properties) if (isUserPropertyName(k)) userProperties[k] = w.properties[k];
  const { type, deliverAt } = deliveryTypeOf(w);
  const sys: Record<string, unknown> = {
    keys: w.keys ?? [],
    messageId: w.messageId,
    bodyDigest: {
      type: DIGEST_MD5,
      checksum: createHash("md5").update(body).digest("hex").toUpperCase(),
    },
    bodyEncoding: ENCODING_IDENTITY,
    messageType: type,
    bornTimestamp: fromMs(w.bornTimestamp),
    bornHost: storeHost,
    storeTimestamp: fromMs(w.storeTimestamp),
    storeHost,
    queueId: localQueueId(w.queueId),
    queueOffset: w.queueOffset,
    deliveryAttempt: w.reconsumeTimes + 1,
  };
  if (w.tag !== undefined) sys.tag = w.tag;
  if (type === MessageType.DELAY) sys.deliveryTimestamp = fromMs(deliverAt);
  if (w.shardingKey !== undefined) sys.messageGroup = w.shardingKey;
  if ("receiptHandle" in w) {
    sys.receiptHandle = w.receiptHandle;
    sys.invisibleDuration = undefined;
  }
  return {
    topic: names.outward(w.topic, namespace),
    userProperties,
    systemProperties: sys,
    body,
  };
}

/** Bytes a delivered message adds to a response, roughly: body plus properties. */
export function deliveredBytes(w: WireMessage): number {
  let n = w.body.length + 256;
  for (const k in w.properties) n += k.length + w.properties[k].length;
  return n;
}
