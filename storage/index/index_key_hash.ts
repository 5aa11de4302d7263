// Key hashes as RocketMQ's IndexService computes them (Java String.hashCode, made
// non-negative): the slot of a key is its hash % hashSlotNum.
import { javaStringHashCode } from "../message/record.ts";

/** abs(key.hashCode()); Java's abs(MIN_VALUE) stays negative, which RocketMQ maps to 0. */
export function indexKeyHash(key: string): number {
  return absHash(javaStringHashCode(key));
}

/**
 * indexKeyHash(`${topic}#${key}`), the key RocketMQ's buildKey makes, without building that
 * string: String.hashCode is h = 31 * h + c over the UTF-16 units, so it runs on across the
 * three parts. Every indexed put hashes its UNIQ_KEY this way.
 */
export function topicKeyHash(topic: string, key: string): number {
  let h = 0;
  for (let i = 0; i < topic.length; i++) h = (Math.imul(h, 31) + topic.charCodeAt(i)) | 0;
  h = (Math.imul(h, 31) + 35) | 0; // "#"
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  return absHash(h);
}

function absHash(hash: number): number {
  return hash === -(2 ** 31) ? 0 : Math.abs(hash);
}
