// Small edits of a stored record (the CommitLog layout, reference/rocketmq.md §1) on their way
// to a client, always on a copy: the delivery's reconsume count (POP), the real topic and
// queue of a transaction's half message (CHECK_TRANSACTION_STATE, as RocketMQ's broker sends
// it). Pure.
const SYSFLAG_BORN_HOST_V6 = 0x10;
const SYSFLAG_STORE_HOST_V6 = 0x20;
const MAGIC_V1 = 0xDAA320A7 | 0;
const MAGIC_V2 = 0xDAA320AB | 0;
const QUEUE_ID_AT = 12;

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** Where RECONSUMETIMES sits. */
function reconsumeAt(v: DataView): number {
  const sysFlag = v.getInt32(36);
  const bornHost = sysFlag & SYSFLAG_BORN_HOST_V6 ? 20 : 8;
  const storeHost = sysFlag & SYSFLAG_STORE_HOST_V6 ? 20 : 8;
  return 48 + bornHost + 8 + storeHost;
}

/** Where the topic length field sits (after the prepared offset and the body). */
function topicAt(v: DataView): number {
  const bodyLenAt = reconsumeAt(v) + 4 + 8;
  return bodyLenAt + 4 + v.getInt32(bodyLenAt);
}

/** A copy of the record with the delivery's reconsume count. */
export function withReconsumeTimes(stored: Uint8Array, reconsumeTimes: number): Uint8Array {
  const copy = stored.slice();
  const v = view(copy);
  v.setInt32(reconsumeAt(v), reconsumeTimes);
  return copy;
}

/** The topic a record names. */
export function recordTopic(record: Uint8Array): string {
  const v = view(record);
  const at = topicAt(v);
  const v2 = v.getInt32(4) === MAGIC_V2;
  const len = v2 ? v.getInt16(at) : v.getUint8(at);
  const start = at + (v2 ? 2 : 1);
  return new TextDecoder().decode(record.subarray(start, start + len));
}

/** A copy of the record under another topic and queue (sizes and magic follow). */
export function withTopic(stored: Uint8Array, topic: string, queueId: number): Uint8Array {
  const v = view(stored);
  const at = topicAt(v);
  const oldV2 = v.getInt32(4) === MAGIC_V2;
  const oldLen = oldV2 ? v.getInt16(at) : v.getUint8(at);
  const rest = stored.subarray(at + (oldV2 ? 2 : 1) + oldLen);
  const name = new TextEncoder().encode(topic);
  const v2 = name.length > 127;
  const out = new Uint8Array(at + (v2 ? 2 : 1) + name.length + rest.length);
  out.set(stored.subarray(0, at));
  const o = view(out);
  if (v2) o.setInt16(at, name.length);
  else o.setUint8(at, name.length);
  out.set(name, at + (v2 ? 2 : 1));
  out.set(rest, at + (v2 ? 2 : 1) + name.length);
  o.setInt32(0, out.length);
  o.setInt32(4, v2 ? MAGIC_V2 : MAGIC_V1);
  o.setInt32(QUEUE_ID_AT, queueId);
  return out;
}
