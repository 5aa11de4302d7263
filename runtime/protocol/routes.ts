// The route table's entries and how to read them (RocketMQ's NameServer tables). Pure:
// functions/ (split mode, Deploy) reads routes with it too.
import type { TopicConfig } from "./types.ts";

/** The part of a KV store the route table needs (Deno.Kv and @deno/kv fit via kv_port). */
export interface RouteKv {
  list(prefix: string[]): Promise<{ key: string[]; value: Uint8Array }[]>;
  set(key: string[], value: Uint8Array): Promise<void>;
  delete(key: string[]): Promise<void>;
}

export const ROUTES_PREFIX = ["mq", "routes"];

export interface RouteEntry {
  cluster: string;
  brokerName: string;
  address: string;
  /** Leadership epoch (fencing token); 0 until replication lands. */
  epoch: number;
  topics: Pick<TopicConfig, "name" | "readQueueNums" | "writeQueueNums" | "perm">[];
  updatedAtMs: number;
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

/** Live routes; expired ones are deleted on the way (the NameServer's 5 s scan, done lazily). */
export async function readRoutes(
  kv: RouteKv,
  nowMs: number,
  expiryMs: number,
): Promise<RouteEntry[]> {
  const live: RouteEntry[] = [];
  for (const { key, value } of await kv.list(ROUTES_PREFIX)) {
    const entry = decodeRoute(value);
    if (entry && entry.updatedAtMs + expiryMs > nowMs) live.push(entry);
    else await kv.delete(key).catch(() => {});
  }
  return live.sort((a, b) => a.brokerName.localeCompare(b.brokerName));
}
