import assert from "node:assert/strict";
import { z } from "@hono/zod-openapi";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { checkJson } from "./json_body.ts";

const schema = z.object({ timestamp: z.int().min(0), note: z.string().optional() }).strict();

function refusal(value: unknown, usage?: (path: string) => string): BrokerError {
  try {
    checkJson(schema, value, { field: "replay field", usage });
  } catch (err) {
    assert.ok(err instanceof BrokerError);
    return err;
  }
  assert.fail("accepted");
}

Deno.test("checkJson() returns the parsed value", () => {
  assert.deepEqual(checkJson(schema, { timestamp: 5 }, { field: "replay field" }), {
    timestamp: 5,
  });
});

Deno.test("checkJson() names an unknown field, as the hand-written checks did", () => {
  const e = refusal({ timestamp: 1, colour: "red" });
  assert.equal(e.code, "INVALID_PARAMETER");
  assert.equal(e.message, "Unknown replay field colour");
});

Deno.test("checkJson() says how to send the body, or which field is wrong", () => {
  const send = () => 'Cannot replay: send {"timestamp": <epoch ms>}';
  assert.equal(refusal({ timestamp: -1 }, send).message, send());
  assert.equal(refusal({}, (path) => `${path} is missing`).message, "timestamp is missing");
  const e = refusal({ timestamp: 1, note: 7 });
  assert.equal(e.code, "INVALID_PARAMETER");
  assert.match(e.message, /^Cannot read replay fields: note: /);
});
