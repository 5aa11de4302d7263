// The limits the embedded HTTP app enforces: the broker's own settings, so the app refuses
// what the broker would.
import type { BrokerConfig } from "./config.ts";
import type { FunctionsLimits } from "../functions/limits.ts";

export function functionsLimits(config: BrokerConfig): FunctionsLimits {
  return {
    maxMessageSize: config.store.maxMessageSize,
    batchBodyBytesMax: config.batchBodyBytesMax,
    batchItemsMax: config.batchItemsMax,
    bodyReadTimeoutMs: config.bodyReadTimeoutMs,
    pullWaitMsMax: config.pullWaitMsMax,
    pullMsgNumsMax: config.pullMsgNumsMax,
    idempotencyKeyBytesMax: config.idempotencyKeyBytesMax,
    userPropertiesMax: config.userPropertiesMax,
  };
}
