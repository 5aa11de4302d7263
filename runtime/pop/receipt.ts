// Receipt handles: a handle names the CK of a received message; these find that CK for a
// group and turn "the CK is gone" into the handle's own error (settled twice).
import { REVIVE_TOPIC } from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { TimerService } from "../timer_service.ts";
import { type Checkpoint, parseCheckpoint } from "./checkpoint.ts";

/** The CK a receipt handle names, if it is `group`'s; else RECEIPT_HANDLE_UNKNOWN. */
export function checkpointOf(timers: TimerService, group: string, handle: string): Checkpoint {
  if (!/^[0-9A-F]{32}$/.test(handle)) {
    throw new BrokerError(
      "RECEIPT_HANDLE_UNKNOWN",
      `Unknown receipt handle ${JSON.stringify(handle.slice(0, 64))}`,
    );
  }
  const record = timers.find(handle, REVIVE_TOPIC);
  const ck = record ? parseCheckpoint(record.body) : undefined;
  if (!ck || ck.g !== group) {
    throw new BrokerError(
      "RECEIPT_HANDLE_UNKNOWN",
      `Unknown receipt handle ${handle} for group ${group}`,
    );
  }
  return ck;
}

/** A cancel of a CK that is no longer pending means it was settled before: acked twice. */
export async function settle<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof BrokerError && err.code === "MESSAGE_NOT_FOUND") {
      throw new BrokerError(
        "RECEIPT_HANDLE_SETTLED",
        "Cannot settle this receipt handle again: it was already acknowledged",
      );
    }
    throw err;
  }
}
