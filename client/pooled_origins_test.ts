import assert from "node:assert/strict";
import { mayHavePooledConnection, noteAnswer } from "./pooled_origins.ts";

Deno.test("an origin may have a pooled connection for the window after its last answer", () => {
  const origin = "http://pooled-origins-test.invalid:1";
  assert.equal(mayHavePooledConnection(origin, 1000, 0), false, "never answered");
  noteAnswer(origin, 10_000);
  assert.equal(mayHavePooledConnection(origin, 1000, 10_500), true);
  assert.equal(mayHavePooledConnection(origin, 1000, 11_000), false, "window passed");
  noteAnswer(origin, 10_400); // within a second of the last note: not refreshed
  assert.equal(mayHavePooledConnection(origin, 1000, 11_200), false);
  noteAnswer(origin, 12_000);
  assert.equal(mayHavePooledConnection(origin, 1000, 12_900), true);
});
