// Filter expressions of consumers: TAG ("*" or "a||b"); SQL92 is refused. The broker's POP
// receive does not filter, so a receive acks what the filter drops, as RocketMQ's proxy
// does with tag mismatches (reference/rocketmq-grpc.md §4.2).
import { BrokerError } from "../../runtime/protocol/errors.ts";

const FILTER_SQL = 2;

/** The tags a filter accepts, or undefined for all. */
export function tagsOf(
  filter: { type?: number; expression?: string } | undefined,
): Set<string> | undefined {
  if (filter?.type === FILTER_SQL) {
    throw new BrokerError("INVALID_PARAMETER", "Cannot filter by SQL92: use a TAG expression");
  }
  const text = (filter?.expression ?? "*").trim();
  if (text === "" || text === "*") return undefined;
  return new Set(text.split("||").map((t) => t.trim()).filter((t) => t));
}

/** The filter as our pull API's `tags` text. */
export function tagsText(tags: Set<string> | undefined): string | undefined {
  return tags ? [...tags].join(" || ") : undefined;
}
