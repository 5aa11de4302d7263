import assert from "node:assert/strict";
import { PopService } from "./pop_service.ts";
import type { PopDeps } from "./pop_service.ts";
import { parseDelayLevels } from "../storage/dispatch_request.ts";

function service(group: { retryBackoffMs: number[] | null }) {
  const deps = {
    groupOf: () => ({ retryBackoffMs: group.retryBackoffMs, retryMaxTimes: 16 }),
    delayLevelsMs: parseDelayLevels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"),
    settings: { popSettledHandlesMax: 16 },
  } as unknown as PopDeps;
  return new PopService(deps);
}

Deno.test("PopService.backoffMs() follows RocketMQ's ladder: delay level 3 + reconsumeTimes, capped at 18", () => {
  const s = service({ retryBackoffMs: null });
  assert.deepEqual([0, 1, 2, 3, 13, 14, 15, 40].map((n) => s.backoffMs("g", n)), [
    10_000, // reconsumeTimes 0 -> level 3 (10s)
    30_000, // level 4
    60_000, // level 5
    120_000, // level 6
    1_800_000, // reconsumeTimes 13 -> level 16 (30m)
    3_600_000, // level 17
    7_200_000, // reconsumeTimes 15 -> level 18 (2h), as reference §9: retry 16 -> level 18
    7_200_000, // capped at 18
  ]);
});

Deno.test("PopService.backoffMs() uses a group's custom backoff list, repeating its last step", () => {
  const s = service({ retryBackoffMs: [100, 2000, 60_000] });
  assert.deepEqual([0, 1, 2, 3, 9].map((n) => s.backoffMs("g", n)), [
    100,
    2000,
    60_000,
    60_000,
    60_000,
  ]);
});
