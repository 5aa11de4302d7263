// KvPort over etcd v3 (the `etcd3` client on @grpc/grpc-js; the same on Deno and Bun), so
// the lease keeper, replica states, route registration and metadata run on etcd unchanged.
// Platform.openKv picks it for a kvPath of the form etcd://host:port[,host:port...].
//
// The mapping keeps KvPort's meaning exactly:
//   key          -> kv_key_codec.ts's packing (Deno KV's key order; a prefix is a byte prefix)
//   versionstamp -> the key's mod_revision, as 20 hex digits: etcd's revision is one
//                   cluster-wide counter, so later writes have greater versionstamps
//   checkAndSet  -> one Txn: compare mod_revision == expected (null: create_revision == 0,
//                   the key does not exist) then put; refused -> {ok: false}
//   list         -> one Range over [prefix + 0x01, prefix + 0xff), by key, limited
//   expireInMs   -> an etcd lease of ceil(ms / 1000) s attached to the put (etcd's lease
//                   TTL has a floor of about 2 s; KvPort already says expiry is not for
//                   correctness: the lease record keeps its deadline in its value)
// Reads are linearizable (etcd's default), as Deno KV's strong reads.
import { Buffer } from "node:buffer";
import type { Etcd3 } from "etcd3";
import {
  KV_LIST_LIMIT_DEFAULT,
  type KvEntry,
  type KvKey,
  type KvPort,
  KvPortError,
  type KvSetOptions,
} from "./kv_port.ts";
import { packKey, unpackKey } from "./kv_key_codec.ts";

/**
 * Each etcd call fails after this long (a gRPC deadline) rather than waiting for an etcd
 * that is gone; the lease keeper times its own calls out sooner (leaseStoreCallTimeoutMs).
 * A setting of the coordination address itself, `etcd://…?callTimeoutMs=N` (100-600000), so
 * every process that opens it (broker, replicas, functions) reads the same value.
 */
export const ETCD_CALL_TIMEOUT_MS_DEFAULT = 5_000;

export interface EtcdAddress {
  /** http://host:port each, as the client takes them. */
  hosts: string[];
  callTimeoutMs: number;
}

export function isEtcdUrl(pathOrUrl: string): boolean {
  return /^etcd:\/\//i.test(pathOrUrl);
}

/** etcd://host:port[,host:port...][?callTimeoutMs=N] -> the client endpoints
 * (http://host:port each) and the call deadline. */
export function parseEtcdUrl(url: string): EtcdAddress {
  const refuse = (why: string): never => {
    throw new KvPortError(`Cannot open ${JSON.stringify(url)}: ${why}`);
  };
  const [rest0, query = ""] = url.replace(/^etcd:\/\//i, "").split("?", 2);
  const rest = rest0.replace(/\/+$/, "");
  const hosts = rest.split(",").map((h) => h.trim());
  const valid = (h: string) => /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/i.test(h);
  if (!isEtcdUrl(url) || rest === "" || !hosts.every(valid)) {
    refuse("expected etcd://host:port[,host:port...][?callTimeoutMs=N]");
  }
  let callTimeoutMs = ETCD_CALL_TIMEOUT_MS_DEFAULT;
  for (const [name, value] of new URLSearchParams(query)) {
    if (name !== "callTimeoutMs") refuse(`unknown parameter ${name} (known: callTimeoutMs)`);
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 100 || n > 600_000) {
      refuse("callTimeoutMs must be a whole number of ms, 100-600000");
    }
    callTimeoutMs = n;
  }
  return { hosts: hosts.map((h) => `http://${h}`), callTimeoutMs };
}

const toVersionstamp = (revision: string) => BigInt(revision).toString(16).padStart(20, "0");

/** The revision a versionstamp names; undefined for one no etcd write could have made. */
function toRevision(versionstamp: string): string | undefined {
  return /^[0-9a-f]{20}$/.test(versionstamp) ? BigInt(`0x${versionstamp}`).toString() : undefined;
}

const bytes = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
const buf = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** Connects lazily: a wrong address fails at the first call, not here. */
export async function openEtcdKv(url: string): Promise<KvPort> {
  const { hosts, callTimeoutMs } = parseEtcdUrl(url);
  // Imported here, not at the top: only an etcd kvPath loads gRPC.
  const { Etcd3 } = await import("etcd3");
  const client: Etcd3 = new Etcd3({
    hosts,
    defaultCallOptions: () => ({ deadline: Date.now() + callTimeoutMs }),
  });
  const entry = (kv: { key: Buffer; value: Buffer; mod_revision: string }): KvEntry => ({
    key: unpackKey(bytes(kv.key)),
    value: bytes(kv.value),
    versionstamp: toVersionstamp(kv.mod_revision),
  });
  const leaseFor = async (options?: KvSetOptions) => {
    if (options?.expireInMs === undefined) return undefined;
    const ttl = Math.max(1, Math.ceil(options.expireInMs / 1000));
    return (await client.leaseClient.leaseGrant({ TTL: ttl })).ID;
  };
  return {
    async get(key: KvKey) {
      const res = await client.kv.range({ key: buf(packKey(key)) });
      return res.kvs.length === 0 ? null : entry(res.kvs[0]);
    },
    async set(key, value, options) {
      const lease = await leaseFor(options);
      const res = await client.kv.put({ key: buf(packKey(key)), value: buf(value), lease });
      return { versionstamp: toVersionstamp(res.header.revision) };
    },
    async delete(key) {
      await client.kv.deleteRange({ key: buf(packKey(key)) });
    },
    async list(prefix, options = {}) {
      const packed = packKey(prefix);
      const res = await client.kv.range({
        key: Buffer.concat([packed, Buffer.from([0x01])]),
        range_end: Buffer.concat([packed, Buffer.from([0xff])]),
        limit: options.limit ?? KV_LIST_LIMIT_DEFAULT,
        sort_target: "Key",
        sort_order: options.reverse ? "Descend" : "Ascend",
      });
      return res.kvs.map(entry);
    },
    async checkAndSet(key, versionstamp, value, options) {
      const packed = buf(packKey(key));
      const revision = versionstamp === null ? "0" : toRevision(versionstamp);
      if (revision === undefined) return { ok: false };
      const lease = await leaseFor(options);
      const res = await client.kv.txn({
        compare: [
          versionstamp === null
            ? { key: packed, target: "Create", result: "Equal", create_revision: "0" }
            : { key: packed, target: "Mod", result: "Equal", mod_revision: revision },
        ],
        success: [{ request_put: { key: packed, value: buf(value), lease } }],
        failure: [],
      });
      return res.succeeded
        ? { ok: true, versionstamp: toVersionstamp(res.header.revision) }
        : { ok: false };
    },
    close: () => client.close(),
  };
}
