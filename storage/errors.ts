// Typed errors of the store. Codes are stable: the runtime maps each to a problem
// `type` (runtime/protocol/errors.ts) that never changes. Damage found on disk is a
// CorruptRecordError and only recovery handles it.

export type StoreErrorCode =
  | "MESSAGE_TOO_LARGE" // body > maxMessageSize (RocketMQ MESSAGE_ILLEGAL)
  | "PROPERTIES_SIZE_EXCEEDED" // encoded properties > 32767 bytes
  | "PROPERTY_ILLEGAL" // a name or value holds \u0001 or \u0002, or a name is empty
  | "TOPIC_ILLEGAL" // empty, too long, or characters outside [%|a-zA-Z0-9_-]
  | "QUEUE_ID_ILLEGAL"
  | "HOST_ILLEGAL"
  | "STORE_NOT_WRITABLE" // a failed fdatasync or a closed store: refuse, never pretend
  | "FLUSH_DISK_TIMEOUT"
  | "OFFSET_ILLEGAL";

export class StoreError extends Error {
  constructor(readonly code: StoreErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StoreError";
  }
}

export class CorruptRecordError extends Error {
  constructor(readonly offset: number, readonly reason: string) {
    super(`Corrupt record at commit-log offset ${offset}: ${reason}`);
    this.name = "CorruptRecordError";
  }
}

/** Our own invariants. A failure is a bug: nobody catches it. Messages are static. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Assertion failed: ${message}`);
}
