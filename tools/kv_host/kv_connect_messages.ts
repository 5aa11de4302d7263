// KV Connect's datapath messages (denokv proto/schema/datapath.proto): requests decoded and
// checked against the limits Deno enforces, responses encoded. Field numbers are the
// proto's; each decoder lists them.
import {
  type Check,
  M_DELETE,
  M_MAX,
  M_MIN,
  M_SET,
  M_SET_SUFFIX_VERSIONSTAMPED_KEY,
  M_SUM,
  type Mutation,
  type ReadRange,
  type StoredEntry,
  type StoredValue,
  VE_BYTES,
  VE_LE64,
  VE_V8,
  VERSIONSTAMP_BYTES,
} from "./memory_kv_store.ts";
import { ProtoWriter, readFields } from "./protobuf.ts";

// Deno's own limits (deno ext/kv/lib.rs, KvConfig defaults); Deno Deploy enforces the
// same. Deno checks them in the client too, @deno/kv does not: the host checks them all.
export const KEY_BYTES_MAX = 2048; // MAX_WRITE_KEY_SIZE_BYTES
export const READ_KEY_BYTES_MAX = KEY_BYTES_MAX + 1; // range ends carry a 0x00/0xff suffix
export const VALUE_BYTES_MAX = 65536; // MAX_VALUE_SIZE_BYTES
export const READ_RANGES_MAX = 10; // MAX_READ_RANGES
export const READ_ENTRIES_MAX = 1000; // MAX_READ_ENTRIES, summed over the ranges
export const CHECKS_MAX = 100; // MAX_CHECKS
export const MUTATIONS_MAX = 1000; // MAX_MUTATIONS, enqueues included
export const WATCHED_KEYS_MAX = 10; // MAX_WATCHED_KEYS
export const MUTATION_BYTES_MAX = 800 * 1024; // MAX_TOTAL_MUTATION_SIZE_BYTES
export const MUTATION_KEY_BYTES_MAX = 80 * 1024; // MAX_TOTAL_KEY_SIZE_BYTES

export const SR_SUCCESS = 1;
export const AW_SUCCESS = 1;
export const AW_CHECK_FAILURE = 2;

/** The request is malformed or over a limit: the host answers 400 with the message. */
export class KvRequestError extends Error {
  override name = "KvRequestError";
}

/** SnapshotRead { ranges 1 }; ReadRange { start 1, end 2, limit 3, reverse 4 } */
export function decodeSnapshotRead(body: Uint8Array): ReadRange[] {
  const ranges: ReadRange[] = [];
  readFields(body, (f) => {
    if (f.number !== 1) return;
    const range: ReadRange = {
      start: new Uint8Array(),
      end: new Uint8Array(),
      limit: 0,
      reverse: false,
    };
    readFields(f.bytes(), (g) => {
      if (g.number === 1) range.start = g.bytes();
      else if (g.number === 2) range.end = g.bytes();
      else if (g.number === 3) range.limit = Number(g.int64()); // int32 on the wire
      else if (g.number === 4) range.reverse = g.bool();
    });
    ranges.push(range);
  });
  if (ranges.length > READ_RANGES_MAX) {
    throw new KvRequestError(`Too many read ranges: ${ranges.length} > ${READ_RANGES_MAX}`);
  }
  let entries = 0;
  for (const r of ranges) {
    if (r.limit < 1) throw new KvRequestError(`Read range limit must be positive: ${r.limit}`);
    checkBytes("Read range start", r.start, READ_KEY_BYTES_MAX);
    checkBytes("Read range end", r.end, READ_KEY_BYTES_MAX);
    entries += r.limit;
  }
  if (entries > READ_ENTRIES_MAX) {
    throw new KvRequestError(`Too many entries requested: ${entries} > ${READ_ENTRIES_MAX}`);
  }
  return ranges;
}

export interface AtomicWriteRequest {
  checks: Check[];
  mutations: Mutation[];
}

/**
 * AtomicWrite { checks 1, mutations 2, enqueues 3 }; Check { key 1, versionstamp 2 };
 * Mutation { key 1, value 2, mutation_type 3, expire_at_ms 4, sum_min 5, sum_max 6,
 * sum_clamp 7 }; KvValue { data 1, encoding 2 }.
 */
export function decodeAtomicWrite(body: Uint8Array): AtomicWriteRequest {
  const checks: Check[] = [];
  const mutations: Mutation[] = [];
  let enqueues = 0;
  readFields(body, (f) => {
    if (f.number === 1) checks.push(decodeCheck(f.bytes()));
    else if (f.number === 2) mutations.push(decodeMutation(f.bytes()));
    else if (f.number === 3) enqueues++; // skipped unread; refused below
  });
  if (enqueues > 0) {
    throw new KvRequestError(
      "Enqueue is not supported: KV Connect has no queues (use a key and watch instead)",
    );
  }
  if (checks.length > CHECKS_MAX) {
    throw new KvRequestError(`Too many checks: ${checks.length} > ${CHECKS_MAX}`);
  }
  if (mutations.length > MUTATIONS_MAX) {
    throw new KvRequestError(`Too many mutations: ${mutations.length} > ${MUTATIONS_MAX}`);
  }
  let payloadBytes = 0;
  let keyBytes = 0;
  for (const c of checks) {
    checkKey("Check key", c.key);
    payloadBytes += c.key.length;
  }
  for (const m of mutations) {
    checkKey("Mutation key", m.key);
    payloadBytes += m.key.length;
    if (m.value !== null) {
      checkBytes("Value", m.value.data, VALUE_BYTES_MAX);
      payloadBytes += m.key.length + m.value.data.length; // counted twice, as Deno does
      keyBytes += m.key.length;
    }
  }
  if (payloadBytes > MUTATION_BYTES_MAX) {
    throw new KvRequestError(
      `Total mutation size too large: ${payloadBytes} > ${MUTATION_BYTES_MAX} bytes`,
    );
  }
  if (keyBytes > MUTATION_KEY_BYTES_MAX) {
    throw new KvRequestError(
      `Total key size too large: ${keyBytes} > ${MUTATION_KEY_BYTES_MAX} bytes`,
    );
  }
  return { checks, mutations };
}

function decodeCheck(bytes: Uint8Array): Check {
  const check: Check = { key: new Uint8Array(), versionstamp: new Uint8Array() };
  readFields(bytes, (f) => {
    if (f.number === 1) check.key = f.bytes();
    else if (f.number === 2) check.versionstamp = f.bytes();
  });
  const n = check.versionstamp.length;
  if (n !== 0 && n !== VERSIONSTAMP_BYTES) {
    throw new KvRequestError(`Check versionstamp must be 0 or 10 bytes, found ${n}`);
  }
  return check;
}

function decodeMutation(bytes: Uint8Array): Mutation {
  const m: Mutation = { key: new Uint8Array(), type: 0, value: null, expireAtMs: 0 };
  let sumLimits = false;
  readFields(bytes, (f) => {
    if (f.number === 1) m.key = f.bytes();
    else if (f.number === 2) m.value = decodeValue(f.bytes());
    else if (f.number === 3) m.type = f.uint();
    else if (f.number === 4) m.expireAtMs = decodeExpireAt(f.int64());
    else if (f.number === 5 || f.number === 6) sumLimits ||= f.bytes().length > 0;
    else if (f.number === 7) sumLimits ||= f.bool();
  });
  if (m.type === M_SET_SUFFIX_VERSIONSTAMPED_KEY) {
    throw new KvRequestError("Versionstamped keys are not supported by this KV Connect host");
  }
  if (m.type === M_DELETE) return { ...m, value: null, expireAtMs: 0 };
  if (m.type !== M_SET && m.type !== M_SUM && m.type !== M_MIN && m.type !== M_MAX) {
    throw new KvRequestError(`Unknown mutation type ${m.type}`);
  }
  if (m.value === null) throw new KvRequestError(`Mutation type ${m.type} needs a value`);
  if (sumLimits) throw new KvRequestError("Sum with min/max/clamp is not supported");
  return m;
}

/** 0 and -1 mean "never"; Deno sends 1 for times at or before the epoch. */
function decodeExpireAt(ms: bigint): number {
  if (ms === 0n || ms === -1n) return 0;
  if (ms < 0n || ms > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new KvRequestError(`Invalid expire_at_ms: ${ms}`);
  }
  return Number(ms);
}

function decodeValue(bytes: Uint8Array): StoredValue {
  const value: StoredValue = { data: new Uint8Array(), encoding: 0 };
  readFields(bytes, (f) => {
    if (f.number === 1) value.data = f.bytes();
    else if (f.number === 2) value.encoding = f.uint();
  });
  if (value.encoding === VE_LE64 && value.data.length !== 8) {
    throw new KvRequestError(`A KvU64 value must be 8 bytes, found ${value.data.length}`);
  }
  if (value.encoding !== VE_V8 && value.encoding !== VE_LE64 && value.encoding !== VE_BYTES) {
    throw new KvRequestError(`Unknown value encoding ${value.encoding}`);
  }
  return value;
}

/** Watch { repeated WatchKey keys = 1 }; WatchKey { key 1 } */
export function decodeWatch(body: Uint8Array): Uint8Array[] {
  const keys: Uint8Array[] = [];
  readFields(body, (f) => {
    if (f.number !== 1) return;
    let key: Uint8Array = new Uint8Array();
    readFields(f.bytes(), (g) => {
      if (g.number === 1) key = g.bytes();
    });
    keys.push(key);
  });
  if (keys.length > WATCHED_KEYS_MAX) {
    throw new KvRequestError(`Too many watched keys: ${keys.length} > ${WATCHED_KEYS_MAX}`);
  }
  for (const key of keys) checkKey("Watched key", key);
  return keys;
}

function checkKey(what: string, key: Uint8Array): void {
  if (key.length === 0) throw new KvRequestError(`${what} is empty`);
  checkBytes(what, key, KEY_BYTES_MAX);
}

function checkBytes(what: string, bytes: Uint8Array, max: number): void {
  if (bytes.length > max) {
    throw new KvRequestError(`${what} too large: ${bytes.length} > ${max} bytes`);
  }
}

/** KvEntry { key 1, value 2, encoding 3, versionstamp 4 } */
function entryMessage(e: StoredEntry): ProtoWriter {
  return new ProtoWriter().bytes(1, e.key).bytes(2, e.data).uint(3, e.encoding).bytes(
    4,
    e.versionstamp,
  );
}

/**
 * SnapshotReadOutput { ranges 1, read_disabled 2, read_is_strongly_consistent 4, status 8 };
 * ReadRangeOutput { values 1 }. One process owns the data, so every read is strong.
 */
export function encodeSnapshotReadOutput(ranges: StoredEntry[][]): Uint8Array<ArrayBuffer> {
  const out = new ProtoWriter();
  for (const entries of ranges) {
    const range = new ProtoWriter();
    for (const e of entries) range.message(1, entryMessage(e));
    out.message(1, range);
  }
  return out.bool(4, true).uint(8, SR_SUCCESS).finish();
}

/** AtomicWriteOutput { status 1, versionstamp 2, repeated uint32 failed_checks 4 } */
export function encodeAtomicWriteOutput(
  result: { versionstamp: Uint8Array } | { failedChecks: number[] },
): Uint8Array<ArrayBuffer> {
  const out = new ProtoWriter();
  if ("versionstamp" in result) {
    return out.uint(1, AW_SUCCESS).bytes(2, result.versionstamp).finish();
  }
  return out.uint(1, AW_CHECK_FAILURE).packed(4, result.failedChecks).finish();
}

export type WatchKeyOutput = { changed: false } | { changed: true; entry: StoredEntry | null };

/**
 * One watch frame: a 4-byte little-endian length, then WatchOutput { status 1, keys 2 };
 * WatchKeyOutput { changed 1, entry_if_changed 2 }. A zero length is a keep-alive.
 */
export function encodeWatchFrame(keys: readonly WatchKeyOutput[]): Uint8Array<ArrayBuffer> {
  const out = new ProtoWriter().uint(1, SR_SUCCESS);
  for (const k of keys) {
    const key = new ProtoWriter().bool(1, k.changed);
    if (k.changed && k.entry) key.message(2, entryMessage(k.entry));
    out.message(2, key);
  }
  const message = out.finish();
  const frame = new Uint8Array(4 + message.length);
  new DataView(frame.buffer).setUint32(0, message.length, true);
  frame.set(message, 4);
  return frame;
}

export const WATCH_KEEPALIVE_FRAME: Uint8Array<ArrayBuffer> = new Uint8Array(4);
