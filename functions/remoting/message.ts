// Messages as remoting clients send them: the properties string, compressed bodies, the
// batch body of SEND_BATCH_MESSAGE, and offset message ids. Pure.
import { nodeZlib } from "../../runtime/protocol/node_builtins.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { ProduceMessage } from "../../runtime/protocol/types.ts";

const NAME_VALUE = "\u0001";
const PAIR = "\u0002";
/** MessageSysFlag.COMPRESSED_FLAG: the body is zlib-deflated (clients do it over 4 KiB). */
export const SYSFLAG_COMPRESSED = 0x1;
const SYSFLAG_COMPRESSION_TYPE = 0x700; // bits 8-10: 0 or 3 is ZLIB; 1 LZ4, 2 ZSTD

/** Properties the client sets for the broker's eyes only: the core sets its own. */
const CLIENT_ONLY = new Set([
  "WAIT",
  "PGROUP",
  "UNIQ_KEY",
  "MIN_OFFSET",
  "MAX_OFFSET",
  "TRAN_MSG",
  "REAL_TOPIC",
  "REAL_QID",
  "RETRY_TOPIC",
  "RECONSUME_TIME",
  "MAX_RECONSUME_TIMES",
  "ORIGIN_MESSAGE_ID",
  "CONSUME_START_TIME",
  "__transactionId__",
  "TRACE_ON",
  "MSG_REGION",
  "INSTANCE_ID",
  "CLUSTER",
]);

export function parseProperties(text: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!text) return out;
  for (const pair of text.split(PAIR)) {
    const i = pair.indexOf(NAME_VALUE);
    if (i > 0) out.set(pair.slice(0, i), pair.slice(i + 1));
  }
  return out;
}

/** The body as stored: a compressed one (zlib) is inflated, so every front end reads it. */
export function plainBody(body: Uint8Array, sysFlag: number): Uint8Array {
  if (!(sysFlag & SYSFLAG_COMPRESSED)) return body;
  const type = (sysFlag & SYSFLAG_COMPRESSION_TYPE) >> 8;
  if (type !== 0 && type !== 3) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot store a body compressed with type ${type}: only ZLIB (0 or 3) is inflated`,
    );
  }
  try {
    return new Uint8Array(nodeZlib().inflateSync(body));
  } catch (err) {
    throw new BrokerError("INVALID_PARAMETER", "Cannot inflate the compressed body", {}, {
      cause: err,
    });
  }
}

const int = (what: string, text: string) => {
  if (!/^-?\d{1,16}$/.test(text)) {
    throw new BrokerError("INVALID_PARAMETER", `Cannot use ${what} ${JSON.stringify(text)}`);
  }
  return Number(text);
};

/** A client's message (body and properties) as the core's ProduceMessage. */
export function toProduceMessage(
  body: Uint8Array,
  properties: Map<string, string>,
  queueId?: number,
): ProduceMessage {
  const m: ProduceMessage = { body };
  if (queueId !== undefined) m.queueId = queueId;
  const user: Record<string, string> = {};
  let users = 0;
  for (const [k, v] of properties) {
    switch (k) {
      case "TAGS":
        if (v !== "") m.tag = v;
        break;
      case "KEYS": {
        const keys = v.split(" ").filter((x) => x !== "");
        if (keys.length) m.keys = keys;
        break;
      }
      case "DELAY": {
        const level = int("DELAY", v);
        if (level > 0) m.delayLevel = level;
        break;
      }
      case "__SHARDINGKEY":
      case "__SHARDING_KEY":
        if (v !== "") m.shardingKey = v;
        break;
      case "TIMER_DELIVER_MS":
        m.deliverAt = int("TIMER_DELIVER_MS", v);
        break;
      case "TIMER_DELAY_MS":
        m.delayMs = int("TIMER_DELAY_MS", v);
        break;
      case "TIMER_DELAY_SEC":
        m.delayMs = int("TIMER_DELAY_SEC", v) * 1000;
        break;
      default:
        if (!CLIENT_ONLY.has(k)) {
          user[k] = v;
          users++;
        }
    }
  }
  if (users) m.properties = user;
  return m;
}

/**
 * SEND_BATCH_MESSAGE's body: messages back to back, each
 * `int totalSize, int magic, int bodyCRC, int flag, int bodyLen + body, short propsLen + props`.
 */
export function decodeBatch(body: Uint8Array): { body: Uint8Array; properties: string }[] {
  const view = new DataView(body.buffer, body.byteOffset, body.length);
  const text = new TextDecoder();
  const out: { body: Uint8Array; properties: string }[] = [];
  let p = 0;
  while (p < body.length) {
    if (p + 20 > body.length) throw batchError(p);
    const total = view.getInt32(p);
    if (total < 22 || p + total > body.length) throw batchError(p);
    const bodyLen = view.getInt32(p + 16);
    if (bodyLen < 0 || 20 + bodyLen + 2 > total) throw batchError(p);
    const propsAt = p + 20 + bodyLen;
    const propsLen = view.getInt16(propsAt);
    if (propsLen < 0 || 20 + bodyLen + 2 + propsLen > total) throw batchError(p);
    out.push({
      body: body.subarray(p + 20, propsAt),
      properties: text.decode(body.subarray(propsAt + 2, propsAt + 2 + propsLen)),
    });
    p += total;
  }
  return out;
}

function batchError(at: number): BrokerError {
  return new BrokerError(
    "INVALID_PARAMETER",
    `Cannot decode the batch body: the message at byte ${at} runs past it or is malformed`,
  );
}

/** RocketMQ's offset message id: store IPv4 + int port + long CommitLog offset, hex. */
export function offsetMessageId(storeIp: Uint8Array, storePort: number, offset: number): string {
  return offsetMessageIdPrefix(storeIp, storePort) + offsetHex(offset);
}

/** The first 16 hex characters of every offset message id of one store host. */
export function offsetMessageIdPrefix(storeIp: Uint8Array, storePort: number): string {
  const b = new Uint8Array(8);
  b.set(storeIp.subarray(0, 4), 0);
  new DataView(b.buffer).setInt32(4, storePort);
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("").toUpperCase();
}

/** The last 16 hex characters: the CommitLog offset (a safe integer, so never negative). */
export function offsetHex(offset: number): string {
  return offset.toString(16).toUpperCase().padStart(16, "0");
}

/** The CommitLog offset inside an offset message id (32 hex characters), if it is one. */
export function offsetOfMessageId(id: string): number | undefined {
  if (!/^[0-9A-Fa-f]{32}$/.test(id)) return undefined;
  return Number(BigInt("0x" + id.slice(16)));
}

/** The parts as one array: a view when they lie back to back in one buffer (a pull's
 * records read into one arena), else a copy. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let adjacent = parts.length > 0;
  for (let i = 1; i < parts.length && adjacent; i++) {
    const a = parts[i - 1], b = parts[i];
    adjacent = a.buffer === b.buffer && a.byteOffset + a.length === b.byteOffset;
  }
  if (adjacent) {
    const last = parts[parts.length - 1];
    const first = parts[0];
    return new Uint8Array(
      first.buffer,
      first.byteOffset,
      last.byteOffset + last.length - first.byteOffset,
    );
  }
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
