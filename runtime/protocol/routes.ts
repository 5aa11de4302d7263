// The route table's entries and how to read them (RocketMQ's NameServer tables). Pure:
// functions/ (split mode, Deploy) reads routes with it too.
import type { TopicConfig } from "./types.ts";

/** A KV key, as Deno KV has them. */
export type RouteKey = readonly (string | number | bigint | boolean | Uint8Array)[];

/** The part of a KV store the route table needs (runtime/platform/kv_port.ts fits). */
export interface RouteKv {
  list(prefix: RouteKey): Promise<{ key: RouteKey; value: Uint8Array; versionstamp?: string }[]>;
  set(key: RouteKey, value: Uint8Array): Promise<unknown>;
  delete(key: RouteKey): Promise<void>;
  /** When the store has it (KvPort does): the expiry sweep re-reads an entry and deletes
   * it only when unchanged since listed. */
  get?(key: RouteKey): Promise<{ versionstamp: string } | null>;
}

export const ROUTES_PREFIX = ["mq", "routes"];

export interface RouteEntry {
  cluster: string;
  brokerName: string;
  address: string;
  /** The HTTP API's base URL when it is not `http://${address}` (a broker serving TLS
   * registers its https:// URL); read it through brokerUrl(). */
  url?: string;
  /** host:port of the broker's RocketMQ remoting port, when it serves one
   * (functions/remoting/: what a NameServer gives remoting clients as the broker address). */
  remotingAddress?: string;
  /** The first 20 hex characters of the message ids the broker makes
   * (runtime/message_id.ts): the cluster router asks this group first in find-by-id. */
  idPrefix?: string;
  /** Leadership epoch (fencing token); 0 until replication lands. */
  epoch: number;
  topics: Pick<TopicConfig, "name" | "readQueueNums" | "writeQueueNums" | "perm">[];
  updatedAtMs: number;
}

/** Where a registered broker serves the HTTP API. */
export function brokerUrl(entry: Pick<RouteEntry, "address" | "url">): string {
  return entry.url ?? `http://${entry.address}`;
}

export function encodeRoute(entry: RouteEntry): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(entry));
}

export function decodeRoute(bytes: Uint8Array): RouteEntry | undefined {
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes));
    return typeof v?.address === "string" && typeof v?.brokerName === "string" &&
        Number.isFinite(v?.updatedAtMs)
      ? v
      : undefined;
  } catch {
    return undefined;
  }
}

/** Live routes; expired ones are deleted on the way (the NameServer's 5 s scan, done lazily):
 * re-read first, and left alone when a broker wrote it again since it was listed (a store
 * without get() deletes it as listed; its broker writes it again with its next heartbeat). */
export async function readRoutes(
  kv: RouteKv,
  nowMs: number,
  expiryMs: number,
): Promise<RouteEntry[]> {
  const live: RouteEntry[] = [];
  for (const { key, value, versionstamp } of await kv.list(ROUTES_PREFIX)) {
    const entry = decodeRoute(value);
    if (entry && entry.updatedAtMs + expiryMs > nowMs) live.push(entry);
    else await deleteUnchanged(kv, key, versionstamp).catch(() => {});
  }
  return live.sort((a, b) => a.brokerName.localeCompare(b.brokerName));
}

async function deleteUnchanged(kv: RouteKv, key: RouteKey, versionstamp?: string) {
  if (kv.get && versionstamp !== undefined) {
    const now = await kv.get(key);
    if (now === null || now.versionstamp !== versionstamp) return;
  }
  await kv.delete(key);
}
