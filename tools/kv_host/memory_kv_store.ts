// The in-memory data behind the KV Connect host: ordered keys, versionstamps, atomic
// check-and-mutate, expiry and change notification. Keys and values are the raw bytes of
// the wire (packed KV keys, encoded values); this file knows nothing of HTTP or protobuf.
//
// Keys are indexed by their lowercase hex: two hex strings compare as their bytes do, so
// one sorted array of hex strings gives byte order and binary search.
//
// Expiry: an entry with `expireAtMs` stays visible until `expireAtMs + expiryLagMs`, then
// reads, checks and watches treat it as absent and it is dropped when next touched. Real
// backends delete expired keys in a background sweep, so values outlive their expiry by
// up to about a minute; pass `expiryLagMs` to reproduce that. Expiry does not notify
// watchers (no sweep runs); the next write of the key does.
import assert from "node:assert/strict";

export const VE_V8 = 1;
export const VE_LE64 = 2;
export const VE_BYTES = 3;

export const M_SET = 1;
export const M_DELETE = 2;
export const M_SUM = 3;
export const M_MAX = 4;
export const M_MIN = 5;
export const M_SET_SUFFIX_VERSIONSTAMPED_KEY = 9;

/** 8 bytes of commit version (big-endian) then 2 bytes of index within the commit. */
export const VERSIONSTAMP_BYTES = 10;

export interface StoredValue {
  data: Uint8Array;
  encoding: number;
}

export interface StoredEntry extends StoredValue {
  key: Uint8Array;
  versionstamp: Uint8Array;
  /** 0 when the entry never expires. */
  expireAtMs: number;
}

export interface ReadRange {
  start: Uint8Array;
  /** Exclusive. */
  end: Uint8Array;
  limit: number;
  reverse: boolean;
}

export interface Check {
  key: Uint8Array;
  /** Empty: the key must not exist. */
  versionstamp: Uint8Array;
}

export interface Mutation {
  key: Uint8Array;
  type: number;
  /** Null only for M_DELETE. */
  value: StoredValue | null;
  expireAtMs: number;
}

export type CommitResult =
  | { status: "COMMITTED"; versionstamp: Uint8Array }
  | { status: "CHECK_FAILED"; failedChecks: number[] };

/** A write that is well-formed but cannot apply to the current data (sum on bytes...). */
export class KvMutationError extends Error {
  override name = "KvMutationError";
}

export interface MemoryKvStoreOptions {
  /** Wall clock in ms since the epoch; expiry is judged by it. */
  nowMs: () => number;
  /** How long an expired entry stays visible (real backends: up to ~60 s). Default 0. */
  expiryLagMs?: number;
}

/**
 * Where a new store's commit versions start: the wall clock in nanoseconds. A host that
 * restarts (empty, under the same database id) must never hand out a versionstamp it
 * handed out before. Clients retry writes while the host is down (Deno's KV Connect
 * client does, past any timeout of ours), and a late compare-and-set whose expected
 * versionstamp matched a new record by chance would overwrite a record its writer never
 * saw. Counting on from the clock keeps every later store's versions above every
 * earlier one's, unless one store made over a million commits per millisecond it lived.
 */
export function firstCommitVersion(nowMs: number): bigint {
  return BigInt(Math.max(0, Math.floor(nowMs))) * 1_000_000n;
}

export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

export class MemoryKvStore {
  readonly #entries = new Map<string, StoredEntry>();
  /** Hex keys of #entries, ascending. */
  readonly #sorted: string[] = [];
  readonly #watchers = new Set<(changedHex: ReadonlySet<string>) => void>();
  readonly #nowMs: () => number;
  readonly #expiryLagMs: number;
  #commitVersion: bigint;

  constructor(options: MemoryKvStoreOptions) {
    this.#nowMs = options.nowMs;
    this.#expiryLagMs = options.expiryLagMs ?? 0;
    assert(this.#expiryLagMs >= 0);
    this.#commitVersion = firstCommitVersion(this.#nowMs());
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: Uint8Array): StoredEntry | undefined {
    return this.#live(toHex(key));
  }

  /** Live entries with start <= key < end, at most `limit`, in key order or reversed. */
  read(range: ReadRange): StoredEntry[] {
    const lo = this.#lowerBound(toHex(range.start));
    const hi = this.#lowerBound(toHex(range.end));
    const out: StoredEntry[] = [];
    const expired: string[] = [];
    const step = range.reverse ? -1 : 1;
    for (let i = range.reverse ? hi - 1 : lo; i >= lo && i < hi; i += step) {
      if (out.length >= range.limit) break;
      const hex = this.#sorted[i];
      const entry = this.#entries.get(hex)!;
      if (this.#isExpired(entry)) expired.push(hex);
      else out.push(entry);
    }
    for (const hex of expired) this.#remove(hex);
    return out;
  }

  /**
   * Applies all mutations, in order, if every check holds; all or nothing. Every
   * mutation of one commit gets the same versionstamp, as on Deno.
   */
  commit(checks: readonly Check[], mutations: readonly Mutation[]): CommitResult {
    const failedChecks: number[] = [];
    checks.forEach((check, i) => {
      const current = this.#live(toHex(check.key));
      const found = current ? toHex(current.versionstamp) : "";
      if (found !== toHex(check.versionstamp)) failedChecks.push(i);
    });
    if (failedChecks.length > 0) return { status: "CHECK_FAILED", failedChecks };

    const versionstamp = this.#nextVersionstamp();
    // Staged first, applied after: a mutation that fails half way leaves nothing behind.
    const staged = new Map<string, StoredEntry | null>();
    const current = (hex: string) => staged.has(hex) ? staged.get(hex)! : this.#live(hex) ?? null;
    for (const m of mutations) {
      const hex = toHex(m.key);
      if (m.type === M_DELETE) {
        staged.set(hex, null);
        continue;
      }
      assert(m.value !== null);
      const value = m.type === M_SET ? m.value : combine(m.type, current(hex), m.value);
      staged.set(hex, {
        key: m.key.slice(),
        data: value.data.slice(),
        encoding: value.encoding,
        versionstamp,
        expireAtMs: m.type === M_SET ? m.expireAtMs : 0,
      });
    }
    for (const [hex, entry] of staged) {
      if (entry === null) this.#remove(hex);
      else this.#put(hex, entry);
    }
    const changed: ReadonlySet<string> = new Set(staged.keys());
    for (const watcher of [...this.#watchers]) watcher(changed);
    return { status: "COMMITTED", versionstamp };
  }

  /** Calls `onChange` after every commit with the hex keys it wrote; returns unsubscribe. */
  onChange(onChange: (changedHex: ReadonlySet<string>) => void): () => void {
    this.#watchers.add(onChange);
    return () => this.#watchers.delete(onChange);
  }

  get watcherCount(): number {
    return this.#watchers.size;
  }

  #nextVersionstamp(): Uint8Array {
    this.#commitVersion++;
    const vs = new Uint8Array(VERSIONSTAMP_BYTES);
    new DataView(vs.buffer).setBigUint64(0, this.#commitVersion);
    return vs;
  }

  #isExpired(entry: StoredEntry): boolean {
    return entry.expireAtMs > 0 && entry.expireAtMs + this.#expiryLagMs <= this.#nowMs();
  }

  /** The entry unless it expired (then it is dropped). */
  #live(hex: string): StoredEntry | undefined {
    const entry = this.#entries.get(hex);
    if (entry && this.#isExpired(entry)) {
      this.#remove(hex);
      return undefined;
    }
    return entry;
  }

  #lowerBound(hex: string): number {
    let lo = 0;
    let hi = this.#sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#sorted[mid] < hex) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #put(hex: string, entry: StoredEntry): void {
    if (!this.#entries.has(hex)) this.#sorted.splice(this.#lowerBound(hex), 0, hex);
    this.#entries.set(hex, entry);
    assert(this.#sorted.length === this.#entries.size);
  }

  #remove(hex: string): void {
    if (!this.#entries.delete(hex)) return;
    const i = this.#lowerBound(hex);
    assert(this.#sorted[i] === hex);
    this.#sorted.splice(i, 1);
  }
}

/** M_SUM, M_MIN, M_MAX on 64-bit unsigned little-endian values (KvU64). */
function combine(type: number, current: StoredEntry | null, operand: StoredValue): StoredValue {
  const name = type === M_SUM ? "sum" : type === M_MIN ? "min" : "max";
  if (operand.encoding !== VE_LE64) {
    throw new KvMutationError(`Cannot ${name}: the operand is not a KvU64`);
  }
  if (current === null) return operand;
  if (current.encoding !== VE_LE64) {
    throw new KvMutationError(`Cannot ${name}: the stored value is not a KvU64`);
  }
  const a = readU64(current.data);
  const b = readU64(operand.data);
  const result = type === M_SUM
    ? BigInt.asUintN(64, a + b)
    : type === M_MIN
    ? (a < b ? a : b)
    : (a > b ? a : b);
  const data = new Uint8Array(8);
  new DataView(data.buffer).setBigUint64(0, result, true);
  return { data, encoding: VE_LE64 };
}

function readU64(bytes: Uint8Array): bigint {
  assert(bytes.length === 8);
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
}
