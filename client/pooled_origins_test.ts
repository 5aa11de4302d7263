import assert from "node:assert/strict";
import { noteAnswer, noteFailure, refusedProvesNotSent } from "./pooled_origins.ts";

Deno.test("a refused connect proves nothing was sent unless a pooled connection can have carried it", () => {
  const origin = "http://pooled-origins-test.invalid:1";
  const W = 1000;
  assert.equal(refusedProvesNotSent(origin, 0, W, 0), true, "never answered: no pool");
  noteAnswer(origin, 10_000);
  // Started before any failure was seen: it may have gone out on a pooled connection.
  assert.equal(refusedProvesNotSent(origin, 10_100, W, 10_200), false);
  noteFailure(origin, 10_200);
  assert.equal(refusedProvesNotSent(origin, 10_150, W, 10_300), false, "in flight at the failure");
  assert.equal(refusedProvesNotSent(origin, 10_250, W, 10_300), true, "started after it");
  noteFailure(origin, 10_400); // the first failure since the answer stays the mark
  assert.equal(refusedProvesNotSent(origin, 10_300, W, 10_500), true);
  noteAnswer(origin, 10_600); // healthy again: a new pool
  assert.equal(refusedProvesNotSent(origin, 10_700, W, 10_800), false);
  assert.equal(refusedProvesNotSent(origin, 10_700, W, 11_700), true, "window passed");
});
