// Small limits for tests of the HTTP app (functions/*_test.ts): one set, so every test
// sees the same edge.
import type { FunctionsLimits } from "../runtime/protocol/limits.ts";

export const TEST_LIMITS: FunctionsLimits = {
  maxMessageSize: 1024,
  batchBodyBytesMax: 4096,
  batchItemsMax: 10,
  bodyReadTimeoutMs: 1000,
  pullWaitMsMax: 15_000,
  pullMsgNumsMax: 100,
  idempotencyKeyBytesMax: 64,
  userPropertiesMax: 4,
};
