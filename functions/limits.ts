// What the functions enforce before a request reaches a broker. The embedded app takes
// them from the broker's own settings (runtime/functions_limits.ts); split mode and Deploy
// from their environment.

export interface FunctionsLimits {
  /** Largest message body (the broker's maxMessageSize), bytes. */
  maxMessageSize: number;
  batchBodyBytesMax: number;
  batchItemsMax: number;
  bodyReadTimeoutMs: number;
  pullWaitMsMax: number;
  pullMsgNumsMax: number;
  idempotencyKeyBytesMax: number;
  userPropertiesMax: number;
}
