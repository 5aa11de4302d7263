// Path and query parameters as schemas: the document shows each one's shape, and parsing
// runs the checks of runtime/protocol/names.ts, whose BrokerErrors (INVALID_NAME,
// SYSTEM_TOPIC, INVALID_PARAMETER) propagate out of parse() as they always have.
import { z } from "@hono/zod-openapi";
import {
  checkGroup,
  checkReadableTopic,
  checkUserTopic,
  GROUP_NAME_CHARS_MAX,
  NAME_PATTERN,
  parseNonNegativeInt,
  READABLE_TOPIC_CHARS_MAX,
  TOPIC_NAME_CHARS_MAX,
} from "../../runtime/protocol/names.ts";

import { QUEUE_ID_MAX } from "../../runtime/protocol/cluster_types.ts";

/** Queue ids are 0-65535 everywhere (RocketMQ's queueId is a short in places). */
export { QUEUE_ID_MAX };

const pattern = NAME_PATTERN.source;

export const userTopic = z.string().transform(checkUserTopic).openapi({
  pattern,
  maxLength: TOPIC_NAME_CHARS_MAX,
  description: "A user topic: no reserved prefix (%, rmq_sys_), no system name",
});

export const readableTopic = z.string().transform(checkReadableTopic).openapi({
  pattern,
  maxLength: READABLE_TOPIC_CHARS_MAX,
  description: "A topic, retry and DLQ topics included",
});

export const group = z.string().transform(checkGroup).openapi({
  pattern,
  maxLength: GROUP_NAME_CHARS_MAX,
  description: "A consumer group (not starting with %)",
});

/** A non-negative integer in text ("12abc", "1e3" and "-0" are refused), 0 to `max`. */
export function intText(what: string, max = Number.MAX_SAFE_INTEGER) {
  return z.string().optional().transform((text) => parseNonNegativeInt(what, text, max))
    .openapi({ type: "integer", minimum: 0, maximum: max });
}

export const queueId = z.string().transform((text) =>
  parseNonNegativeInt("queueId", text, QUEUE_ID_MAX)!
).openapi({ type: "integer", minimum: 0, maximum: QUEUE_ID_MAX });

export const text = z.string();
export const optionalText = z.string().optional();

export const topicParams = z.object({ topic: userTopic });
export const groupParams = z.object({ group });
