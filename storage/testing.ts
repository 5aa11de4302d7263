// Helpers shared by storage tests and benchmarks: a seeded random source and small-store
// settings. Not used by production code.
import { defaultStoreConfig, type StoreConfig } from "./config.ts";
import type { MessageInput } from "./message/record.ts";
import { type MessageStore, STORE_CORE } from "./message_store.ts";
import type { StoreCore } from "./store_core.ts";

/** mulberry32: a tiny seeded PRNG, so a failing seed reproduces exactly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A store small enough to roll segments, ConsumeQueue files and index files in tests. */
export function smallStoreConfig(root: string, patch: Partial<StoreConfig> = {}): StoreConfig {
  return {
    ...defaultStoreConfig(root),
    mappedFileSizeCommitLog: 8192,
    segmentZeroFill: false,
    mappedFileSizeConsumeQueueUnits: 16,
    maxHashSlotNum: 64,
    maxIndexNum: 256,
    ...patch,
  };
}

export const LOOPBACK = { ip: new Uint8Array([127, 0, 0, 1]), port: 10911 };

export function testMessage(
  topic: string,
  queueId: number,
  body: Uint8Array,
  properties: Record<string, string> = {},
): MessageInput {
  return {
    topic,
    queueId,
    body,
    properties: new Map(Object.entries(properties)),
    bornTimestamp: 1_700_000_000_000,
    bornHost: LOOPBACK,
    storeHost: LOOPBACK,
  };
}

/** A store's parts (CommitLog segments, ConsumeQueues), for tests that check files directly. */
export function storeCore(store: MessageStore): StoreCore {
  return store[STORE_CORE]();
}
