// Error mapping every core module shares; a leaf, so the modules import it without
// importing each other.
import { BrokerError } from "../protocol/errors.ts";
import { fromStoreError } from "../wire.ts";

/** Any failure as a catalogue error: store refusals mapped, the unknown as INTERNAL. */
function asBrokerError(err: unknown): BrokerError {
  if (err instanceof BrokerError) return err;
  const mapped = fromStoreError(err);
  if (mapped instanceof BrokerError) return mapped;
  return new BrokerError("INTERNAL", "Internal error", {}, { cause: err });
}

/** A put's rejection handler: one function for all puts, so none allocates a closure. */
export function rethrowStoreError(err: unknown): never {
  throw fromStoreError(err);
}

/** One item's failure inside a batch answer (produce batch, ack batch). */
export function itemError(err: unknown) {
  const e = asBrokerError(err);
  return { type: e.type, status: e.status, detail: e.message, code: e.code };
}
