// The KV store as the broker sees it: get, set, delete, list by prefix, one compare-and-set,
// close. Platform.openKv opens it with one of two clients:
//
// - Deno.openKv, on Deno (deno.ts).
// - openNodeKv below: @deno/kv's openKv, on Bun (bun.ts), with the limited V8 serializer (Bun's
//   own v8.serialize writes JavaScriptCore's format, which Deno cannot read).
//
// Both take a local SQLite path (one process only: a second one gets "database is locked")
// or an http(s) URL that speaks KV Connect (Deno Deploy, denokv, tools/kv_host/main.ts).
//
// Values are Uint8Array only, in our own encoding: V8-serialized values written by one
// runtime cannot always be read by the other, so reading anything else is an error.
//
// The access token for a KV Connect URL: @deno/kv takes it as an argument. Deno.openKv has
// no such argument; Deno reads DENO_KV_ACCESS_TOKEN from the process environment when it
// opens the database. So set that variable in the environment of the process that opens
// the KV (for a child: `spawn(cmd, args, {env: {...process.env, DENO_KV_ACCESS_TOKEN}})`;
// in a test: `process.env.DENO_KV_ACCESS_TOKEN = token` before opening). Deno's openKv checks
// that the token it is given is the one Deno will use, rather than changing the
// environment behind the caller's back.

export type KvKeyPart = Uint8Array | string | number | bigint | boolean;
export type KvKey = readonly KvKeyPart[];

export interface KvEntry {
  key: KvKeyPart[];
  value: Uint8Array;
  /** 20 hex digits; later writes have greater versionstamps. */
  versionstamp: string;
}

export type KvCommitResult = { ok: true; versionstamp: string } | { ok: false };

export interface KvSetOptions {
  /**
   * Lets the store drop the value after this long. Lazy: stores keep expired values for
   * up to about a minute, so never rely on it for correctness (a lease keeps its deadline
   * in the value instead).
   */
  expireInMs?: number;
}

/** Entries returned by list() when the caller gives no limit. */
export const KV_LIST_LIMIT_DEFAULT = 1000;

export interface KvPort {
  get(key: KvKey): Promise<KvEntry | null>;
  set(key: KvKey, value: Uint8Array, options?: KvSetOptions): Promise<{ versionstamp: string }>;
  delete(key: KvKey): Promise<void>;
  /** Entries under `prefix` (not the prefix itself), in key order; at most `limit`. */
  list(prefix: KvKey, options?: { limit?: number; reverse?: boolean }): Promise<KvEntry[]>;
  /**
   * Sets `key` to `value` only if its versionstamp is still `versionstamp` (null: only if
   * the key does not exist). `{ok: false}` when another write came first.
   */
  checkAndSet(
    key: KvKey,
    versionstamp: string | null,
    value: Uint8Array,
    options?: KvSetOptions,
  ): Promise<KvCommitResult>;
  close(): void;
}

/** A refused open or a value that is not ours. */
export class KvPortError extends Error {
  override name = "KvPortError";
}

export function isKvConnectUrl(pathOrUrl: string): boolean {
  return /^https?:\/\//i.test(pathOrUrl);
}

export interface KvOpenOptions {
  /** For a KV Connect URL. On Deno it must equal DENO_KV_ACCESS_TOKEN (see above). */
  accessToken?: string;
}

/** @deno/kv; `accessToken` defaults to DENO_KV_ACCESS_TOKEN (read by @deno/kv itself). */
export async function openNodeKv(pathOrUrl: string, accessToken?: string): Promise<KvPort> {
  // Imported here, not at the top: on Deno this module never loads @deno/kv's native addon.
  const { openKv, makeLimitedV8Serializer } = await import("@deno/kv");
  const kv = await openKv(pathOrUrl, {
    ...(accessToken === undefined ? {} : { accessToken }),
    ...makeLimitedV8Serializer(),
  });
  return wrapKv(kv as unknown as KvLike, pathOrUrl);
}

/** What Deno.Kv and @deno/kv's Kv have in common, as far as we use it. */
export interface KvLike {
  get(
    key: KvKey,
  ): Promise<{ key: readonly unknown[]; value: unknown; versionstamp: string | null }>;
  set(
    key: KvKey,
    value: unknown,
    options?: { expireIn?: number },
  ): Promise<{ versionstamp: string }>;
  delete(key: KvKey): Promise<void>;
  list(
    selector: { prefix: KvKey },
    options?: { limit?: number; reverse?: boolean },
  ): AsyncIterable<{ key: readonly unknown[]; value: unknown; versionstamp: string }>;
  atomic(): KvAtomicLike;
  close(): void;
}

interface KvAtomicLike {
  check(check: { key: KvKey; versionstamp: string | null }): KvAtomicLike;
  set(key: KvKey, value: unknown, options?: { expireIn?: number }): KvAtomicLike;
  commit(): Promise<{ ok: true; versionstamp: string } | { ok: false }>;
}

/** Our KvPort over either runtime's KV client; `where` names the database in errors. */
export function wrapKv(kv: KvLike, where: string): KvPort {
  const entry = (e: { key: readonly unknown[]; value: unknown; versionstamp: string }) => {
    if (!(e.value instanceof Uint8Array)) {
      throw new KvPortError(
        `Cannot read ${JSON.stringify(e.key, bigints)} in ${where}: the value is ${
          describe(e.value)
        }, not a Uint8Array (written by another program?)`,
      );
    }
    // @deno/kv's SQLite path returns Buffers; hand out plain Uint8Array views, as Deno does.
    const value = e.value.constructor === Uint8Array
      ? e.value
      : new Uint8Array(e.value.buffer, e.value.byteOffset, e.value.byteLength);
    return { key: [...e.key] as KvKeyPart[], value, versionstamp: e.versionstamp };
  };
  const setOptions = (o?: KvSetOptions) =>
    o?.expireInMs === undefined ? undefined : { expireIn: o.expireInMs };
  return {
    async get(key) {
      const e = await kv.get(key);
      return e.versionstamp === null ? null : entry({ ...e, versionstamp: e.versionstamp });
    },
    async set(key, value, options) {
      const { versionstamp } = await kv.set(key, value, setOptions(options));
      return { versionstamp };
    },
    delete: (key) => kv.delete(key),
    async list(prefix, options = {}) {
      const limit = options.limit ?? KV_LIST_LIMIT_DEFAULT;
      // @deno/kv 0.14 reads a prefix range from the prefix key itself and skips that key
      // only when it comes first: listed in reverse it is returned, and with limit 1 (a
      // batch of one) a value at the prefix key makes it re-read the same batch forever.
      // So ask for one more (batches of at least 2), drop the prefix key, trim to `limit`.
      const out: KvEntry[] = [];
      const batch = { limit: limit + 1, reverse: options.reverse };
      for await (const e of kv.list({ prefix }, batch)) {
        if (e.key.length === prefix.length) continue;
        if (out.length === limit) break;
        out.push(entry(e));
      }
      return out;
    },
    async checkAndSet(key, versionstamp, value, options) {
      const result = await kv.atomic().check({ key, versionstamp }).set(
        key,
        value,
        setOptions(options),
      ).commit();
      return result.ok ? { ok: true, versionstamp: result.versionstamp } : { ok: false };
    },
    close: () => kv.close(),
  };
}

function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? `${value}n` : value;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return `a ${value.constructor?.name ?? "object"}`;
  return `a ${typeof value}`;
}
