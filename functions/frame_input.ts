// A binary batch frame's items (runtime/protocol/batch_frame.ts) as ProduceMessages: the
// number ranges the JSON item's schema checks, then the value checks every item passes
// (produce_input.ts messageFromFields). Each failure is that item's own INVALID_PARAMETER.
import { BrokerError } from "../runtime/protocol/errors.ts";
import type { FrameItem } from "../runtime/protocol/batch_frame.ts";
import type { ProduceMessage } from "../runtime/protocol/types.ts";
import type { InputLimits } from "./produce_input.ts";
import { messageFromFields } from "./batch_input.ts";

/** The numbers of an item and their ranges, as batchItem's schema has them. */
const RANGES = [
  ["queueId", 65535],
  ["delayLevel", 1000],
  ["delayMs", Number.MAX_SAFE_INTEGER],
  ["deliverAt", Number.MAX_SAFE_INTEGER],
] as const;

export function messageFromFrameItem(item: FrameItem, limits: InputLimits): ProduceMessage {
  for (const [name, max] of RANGES) {
    const v = item[name];
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0 && v <= max)) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot read message: ${name}: ${v} is not a whole number from 0 to ${max}`,
      );
    }
  }
  return messageFromFields(item, item.body, limits);
}
