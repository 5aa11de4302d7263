// The CommitLog's write buffer starts empty, doubles from 64 KiB as a tick needs, never past
// its max, and keeps the pending bytes when it grows.
import assert from "node:assert/strict";
import { WRITE_BUFFER_BYTES_MIN, WriteBuffer } from "./write_buffer.ts";

Deno.test("WriteBuffer: empty until used, then 64 KiB, doubling up to max, pending bytes kept", () => {
  const b = new WriteBuffer(1 << 20);
  assert.equal(b.bytes.length, 0);
  b.ensure(100, 0);
  assert.equal(b.bytes.length, WRITE_BUFFER_BYTES_MIN);
  b.bytes.fill(7, 0, 100);
  b.view.setUint32(100, 0xdeadbeef);
  b.ensure(WRITE_BUFFER_BYTES_MIN, 104); // fits: no new buffer
  assert.equal(b.bytes.length, WRITE_BUFFER_BYTES_MIN);
  const before = b.bytes;
  b.ensure(200_000, 104);
  assert.equal(b.bytes.length, 256 * 1024);
  assert.notEqual(b.bytes, before);
  assert.deepEqual([...b.bytes.subarray(0, 100)], new Array(100).fill(7));
  assert.equal(b.view.getUint32(100), 0xdeadbeef, "the view follows the new buffer");
  b.ensure(1 << 20, 0);
  assert.equal(b.bytes.length, 1 << 20, "capped at max");
});

Deno.test("WriteBuffer: a max below 64 KiB is the whole buffer", () => {
  const b = new WriteBuffer(4096);
  b.ensure(10, 0);
  assert.equal(b.bytes.length, 4096);
  b.ensure(4096, 10);
  assert.equal(b.bytes.length, 4096);
});
