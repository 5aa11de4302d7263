// apiSource tells the resolver about broker failures only: the caller's own abort or
// timeout must not drop every resolved route (review of issue #26, #10).
import assert from "node:assert/strict";
import { apiSource } from "./route.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { BrokerClient } from "../../runtime/protocol/core_api.ts";

Deno.test("apiSource: an abort or timeout is not a broker failure", async () => {
  const failed: unknown[] = [];
  const api = {} as BrokerClient;
  const source = apiSource({ get: () => Promise.resolve(api), failed: (_c, e) => failed.push(e) });
  const reject = (err: unknown) => source.call(() => Promise.reject(err));
  await assert.rejects(reject(new DOMException("caller left", "AbortError")));
  await assert.rejects(reject(new DOMException("too slow", "TimeoutError")));
  await assert.rejects(reject(new BrokerError("TOPIC_NOT_FOUND", "x")));
  assert.deepEqual(failed, []);
  await assert.rejects(reject(new TypeError("fetch failed")));
  await assert.rejects(reject(new BrokerError("NOT_LEADER", "x")));
  assert.equal(failed.length, 2);
});
