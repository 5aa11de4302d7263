// The hash ring behind AllocateMessageQueueConsistentHash, computed as RocketMQ's
// common/consistenthash/{ConsistentHashRouter, VirtualNode}.java compute it, so a consumer
// of ours and a Java consumer in one group pick the same queues.
//
// Ring: a sorted map from hash to physical node. Node `cid` owns virtual nodes whose keys
// are `${cid}-${replica}`, replica 0..vNodeCount-1 (shifted up by the replicas `cid`
// already has, should it be added twice). A later node whose virtual node hashes to a
// taken position replaces the earlier one there (Java TreeMap.put). An object key goes to
// the first virtual node whose hash is >= its own, wrapping to the lowest.
//
//   hash:  0 ........ h(a-3) ... h(b-0) ... h(key) ... h(a-7) ........ 2^32 - 1
//                                            └──────────►┘   key routes to "a"

import assert from "node:assert/strict";
import { nodeCrypto } from "../protocol/node_builtins.ts";

/**
 * Maps a key to its ring position, a finite number (RocketMQ's HashFunction returns a Java
 * long). A custom one is code, not input: a non-finite result fails an assertion.
 */
export type HashFunction = (key: string) => number;

/**
 * RocketMQ's MD5Hash: the first 4 bytes of MD5(key) read big-endian as an unsigned
 * number, 0..2^32-1. Java hashes `key.getBytes()`, the default charset, which is UTF-8 on
 * JDK 18+ (JEP 400) and on Linux before it; we hash UTF-8.
 */
export function md5Hash(key: string): number {
  return nodeCrypto().createHash("md5").update(key, "utf8").digest().readUInt32BE(0);
}

/** Hash positions sorted ascending, and the node at each. Built once, then read-only. */
export class ConsistentHashRouter {
  readonly #positions: number[];
  readonly #nodes: string[];
  readonly #hash: HashFunction;

  /**
   * Adds `nodes` in the given order (the order decides collisions), `vNodeCount`
   * virtual nodes each. `vNodeCount` is checked by the caller: a whole number >= 0.
   */
  constructor(nodes: readonly string[], vNodeCount: number, hash: HashFunction = md5Hash) {
    const ring = new Map<number, string>();
    const replicas = new Map<string, number>(); // virtual nodes of each node on the ring
    for (const node of nodes) {
      const existing = replicas.get(node) ?? 0;
      for (let i = 0; i < vNodeCount; i++) {
        const position = hash(`${node}-${i + existing}`);
        assert(Number.isFinite(position));
        const replaced = ring.get(position);
        if (replaced !== undefined) replicas.set(replaced, (replicas.get(replaced) ?? 0) - 1);
        ring.set(position, node);
        replicas.set(node, (replicas.get(node) ?? 0) + 1);
      }
    }
    this.#positions = [...ring.keys()].sort((a, b) => a - b);
    this.#nodes = this.#positions.map((position) => ring.get(position)!);
    this.#hash = hash;
  }

  /** The node that owns `objectKey`, or undefined on an empty ring. */
  routeNode(objectKey: string): string | undefined {
    if (this.#positions.length === 0) return undefined;
    const hash = this.#hash(objectKey);
    assert(Number.isFinite(hash));
    // Binary search for the first position >= hash (Java's ring.tailMap(hash).firstKey()).
    let low = 0;
    let high = this.#positions.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#positions[middle] < hash) low = middle + 1;
      else high = middle;
    }
    return this.#nodes[low === this.#positions.length ? 0 : low];
  }
}
