import assert from "node:assert/strict";
import { ConsistentHashRouter, md5Hash } from "./consistent_hash_router.ts";

Deno.test("md5Hash() is the first 4 bytes of MD5, big-endian, unsigned", () => {
  // RFC 1321 test vectors: MD5("") = d41d8cd9..., MD5("abc") = 90015098...,
  // MD5("message digest") = f96b697d...
  assert.equal(md5Hash(""), 0xd41d8cd9);
  assert.equal(md5Hash("abc"), 0x90015098);
  assert.equal(md5Hash("message digest"), 0xf96b697d);
  // UTF-8 (c3 a9), as Java's getBytes() on JDK 18+: MD5("é") = 66ddcd97... (md5sum)
  assert.equal(md5Hash("é"), 0x66ddcd97);
});

/** A hash with positions chosen by hand; unknown keys fail the test. */
function tableHash(table: Record<string, number>) {
  return (key: string): number => {
    const position = table[key];
    assert.ok(position !== undefined, key);
    return position;
  };
}

Deno.test("ConsistentHashRouter.routeNode() picks the first virtual node at or after the key, wrapping", () => {
  const hash = tableHash({
    "a-0": 15,
    "a-1": 45,
    "b-0": 25,
    "b-1": 35,
    k0: 0,
    k15: 15, // exactly on a-0: a-0 owns it
    k20: 20,
    k35: 35,
    k46: 46, // past the last node: wraps to a-0
  });
  const router = new ConsistentHashRouter(["a", "b"], 2, hash);
  const routes = ["k0", "k15", "k20", "k35", "k46"].map((key) => router.routeNode(key));
  assert.deepEqual(routes, ["a", "a", "b", "b", "a"]);
});

Deno.test("ConsistentHashRouter: a later node takes a shared position, and a repeated node gets new replicas", () => {
  const collide = tableHash({ "a-0": 10, "b-0": 10, k: 5 });
  assert.equal(new ConsistentHashRouter(["a", "b"], 1, collide).routeNode("k"), "b");
  assert.equal(new ConsistentHashRouter(["b", "a"], 1, collide).routeNode("k"), "a");

  // RocketMQ numbers a node's new virtual nodes after those it already has on the ring.
  const hashed: string[] = [];
  const repeated = tableHash({ "a-0": 10, "a-1": 20, "b-0": 40, k: 15 });
  const recording = (key: string) => (hashed.push(key), repeated(key));
  assert.equal(new ConsistentHashRouter(["a", "b", "a"], 1, recording).routeNode("k"), "a");
  assert.deepEqual(hashed, ["a-0", "b-0", "a-1", "k"]);

  // Only replicas still on the ring count: b took a-0's place, so the second "a" is a-0 again
  // and takes the place back.
  hashed.length = 0;
  const collideThenRepeat = (key: string) => (hashed.push(key), collide(key));
  assert.equal(new ConsistentHashRouter(["a", "b", "a"], 1, collideThenRepeat).routeNode("k"), "a");
  assert.deepEqual(hashed, ["a-0", "b-0", "a-0", "k"]);
});

Deno.test("ConsistentHashRouter.routeNode() on an empty ring is undefined", () => {
  assert.equal(new ConsistentHashRouter([], 10).routeNode("k"), undefined);
  assert.equal(new ConsistentHashRouter(["a"], 0).routeNode("k"), undefined);
});
