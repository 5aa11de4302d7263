// Message ids: exact characters for known inputs (RocketMQ UNIQ_KEY layout).
import assert from "node:assert/strict";
import { MESSAGE_ID_PATTERN, MessageIdGenerator } from "./message_id.ts";

Deno.test("MessageIdGenerator.next() writes IP, PID, random, month ms and counter as hex", () => {
  const monthStart = new Date(2026, 0, 1).getTime(); // local time, as the generator uses
  let now = monthStart + 0x01020304;
  const ids = new MessageIdGenerator({
    ip: new Uint8Array([10, 1, 200, 7]),
    pid: 70123, // 0x111EB: only the low short is kept
    nowMs: () => now,
    random: () => 0.5, // int 0x80000000; counter starts at 0x8000
  });
  assert.equal(ids.next(), "0A01C807" + "11EB" + "80000000" + "01020304" + "8001");
  assert.equal(ids.prefix, "0A01C807" + "11EB" + "80000000", "the fixed head, 20 characters");
  now = new Date(2026, 1, 1).getTime() + 0xff; // next month: ms counted from its start
  assert.equal(ids.next(), "0A01C807" + "11EB" + "80000000" + "000000FF" + "8002");
});

Deno.test("MessageIdGenerator.next() wraps the counter at 0xFFFF and takes IPv4-mapped IPv6", () => {
  const ip = new Uint8Array(16);
  ip.set([0xff, 0xff, 127, 0, 0, 1], 10);
  const ids = new MessageIdGenerator({
    ip,
    pid: 1,
    nowMs: () => new Date(2026, 5, 1).getTime(),
    random: () => 0.99999, // int 0xFFFF583A; counter starts at 0xFFFF
  });
  const id = ids.next();
  assert.match(id, MESSAGE_ID_PATTERN);
  assert.equal(id, "7F000001" + "0001" + "FFFF583A" + "00000000" + "0000");
});
