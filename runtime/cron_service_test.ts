import assert from "node:assert/strict";
import { checkCron, nextTickMs } from "./cron_service.ts";
import { BrokerError } from "./protocol/errors.ts";

const at = (iso: string) => new Date(iso).getTime();
const iso = (ms: number | undefined) => ms === undefined ? "none" : new Date(ms).toISOString();

Deno.test("nextTickMs() steps a daily 02:30 Berlin schedule across the spring-forward gap", () => {
  // 2026-03-29 02:00 CET jumps to 03:00 CEST: 02:30 does not exist that day.
  let t = at("2026-03-27T12:00:00Z");
  const ticks: string[] = [];
  for (let i = 0; i < 4; i++) ticks.push(iso(t = nextTickMs("30 2 * * *", "Europe/Berlin", t)!));
  assert.deepEqual(ticks, [
    "2026-03-28T01:30:00.000Z", // 02:30 CET
    "2026-03-29T01:00:00.000Z", // the gap: once, at 03:00 CEST, the first instant after it
    "2026-03-30T00:30:00.000Z", // 02:30 CEST
    "2026-03-31T00:30:00.000Z",
  ]);
});

Deno.test("nextTickMs() fires an hourly New York schedule at both 01:00s when clocks fall back", () => {
  // 2026-11-01 02:00 EDT falls back to 01:00 EST: 01:00 happens twice (05:00Z and 06:00Z).
  let t = at("2026-11-01T03:30:00Z");
  const ticks: string[] = [];
  for (let i = 0; i < 5; i++) ticks.push(iso(t = nextTickMs("0 * * * *", "America/New_York", t)!));
  assert.deepEqual(ticks, [
    "2026-11-01T04:00:00.000Z", // 00:00 EDT
    "2026-11-01T05:00:00.000Z", // 01:00 EDT
    "2026-11-01T06:00:00.000Z", // 01:00 EST
    "2026-11-01T07:00:00.000Z", // 02:00 EST
    "2026-11-01T08:00:00.000Z",
  ]);
});

Deno.test("nextTickMs() honours six-field (seconds) expressions and the zone's offset", () => {
  assert.equal(
    iso(nextTickMs("*/15 * * * * *", "UTC", at("2026-01-01T00:00:07Z"))),
    "2026-01-01T00:00:15.000Z",
  );
  assert.equal(
    iso(nextTickMs("0 9 * * 1", "Asia/Tokyo", at("2026-06-01T00:00:00Z"))),
    "2026-06-08T00:00:00.000Z",
  );
});

Deno.test("checkCron() refuses bad expressions and unknown zones with a typed error", () => {
  for (
    const [cron, zone] of [["61 * * * *", "UTC"], ["not cron", "UTC"], [
      "* * * * *",
      "Mars/Olympus",
    ]]
  ) {
    assert.throws(
      () => checkCron(cron, zone),
      (e: unknown) => e instanceof BrokerError && e.code === "INVALID_PARAMETER",
    );
  }
  checkCron("*/5 * * * *", "Europe/Berlin");
});
