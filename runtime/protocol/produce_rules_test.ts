import assert from "node:assert/strict";
import { BrokerError } from "./errors.ts";
import { checkProduce, type ProduceRules } from "./produce_rules.ts";
import type { ProduceMessage } from "./types.ts";

const rules: ProduceRules = {
  userPropertiesMax: 2,
  idempotencyKeyBytesMax: 8,
  delayLevels: 3,
  delayLevelsText: "1s 5s 10s",
};
const body = new Uint8Array([1]);

function refusal(message: Partial<ProduceMessage>): string | undefined {
  try {
    checkProduce({ body, ...message }, rules);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof BrokerError);
    return err.code;
  }
}

Deno.test("checkProduce() passes a message within every rule", () => {
  assert.equal(
    refusal({
      tag: "created",
      keys: ["order-42", "c-7"],
      shardingKey: "order-42",
      contentType: "application/json",
      idempotencyKey: "abc",
      properties: { region: "eu", tier: "1" },
      delayLevel: 3,
    }),
    undefined,
  );
  assert.equal(refusal({ delayMs: 5 }), undefined);
});

Deno.test("checkProduce() refuses each broken rule with its typed error", () => {
  assert.equal(refusal({ tag: "a||b" }), "INVALID_HEADER");
  assert.equal(refusal({ tag: " padded" }), "INVALID_HEADER");
  assert.equal(refusal({ tag: "t".repeat(129) }), "INVALID_HEADER");
  assert.equal(refusal({ keys: ["two words"] }), "INVALID_HEADER");
  assert.equal(refusal({ keys: Array.from({ length: 33 }, (_, i) => `k${i}`) }), "INVALID_HEADER");
  assert.equal(refusal({ shardingKey: "" }), "INVALID_HEADER");
  assert.equal(refusal({ contentType: "text/plain\n" }), "INVALID_HEADER");
  assert.equal(refusal({ idempotencyKey: "123456789" }), "INVALID_HEADER");
  assert.equal(refusal({ properties: { UNIQ_KEY: "x" } }), "INVALID_PROPERTY");
  assert.equal(refusal({ properties: { a: "1", b: "2", c: "3" } }), "INVALID_PROPERTY");
  assert.equal(refusal({ delayLevel: 4 }), "INVALID_PARAMETER");
  assert.equal(refusal({ delayLevel: 1.5 }), "INVALID_PARAMETER");
  assert.equal(refusal({ delayMs: 5, deliverAt: 10 }), "INVALID_PARAMETER");
  assert.equal(refusal({ delayLevel: 1, delayMs: 5 }), "INVALID_PARAMETER");
});
