// Names and reserved words (reference/rocketmq.md §18). Checked before a name touches
// the file system or a database: names become folder names under consumequeue/.
import { RESERVED_PROPERTIES } from "../../storage/message/message_const.ts";
import { BrokerError } from "./errors.ts";

export const NAME_PATTERN = /^[%|a-zA-Z0-9_-]+$/;
export const TOPIC_NAME_CHARS_MAX = 127;
export const GROUP_NAME_CHARS_MAX = 120;
/** Retry and DLQ topics (%RETRY%group, %DLQ%group) hold a group name, so run longer. */
export const READABLE_TOPIC_CHARS_MAX = 255;

/** Topics clients may not write to (TopicValidator's NOT_ALLOWED_SEND_TOPIC_SET). */
const NOT_ALLOWED_SEND = new Set([
  "SCHEDULE_TOPIC_XXXX",
  "RMQ_SYS_TRANS_HALF_TOPIC",
  "RMQ_SYS_TRANS_OP_HALF_TOPIC",
  "TRANS_CHECK_MAX_TIME_TOPIC",
  "SELF_TEST_TOPIC",
  "OFFSET_MOVED_EVENT",
]);
const SYSTEM_TOPICS = new Set([
  ...NOT_ALLOWED_SEND,
  "TBW102",
  "BenchmarkTest",
  "RMQ_SYS_TRACE_TOPIC",
  "CHECKPOINT_TOPIC",
]);

export function isSystemTopic(topic: string): boolean {
  return SYSTEM_TOPICS.has(topic) || topic.startsWith("rmq_sys_") || topic.startsWith("%");
}

/** A topic a client may create or produce to: no reserved prefix, no system name. */
export function checkUserTopic(topic: string): string {
  checkName("topic", topic, TOPIC_NAME_CHARS_MAX);
  if (isSystemTopic(topic)) {
    throw new BrokerError(
      "SYSTEM_TOPIC",
      `Cannot use topic ${topic} as it is a system topic or has a reserved prefix (%, rmq_sys_)`,
    );
  }
  return topic;
}

/** A topic a client may read (retry and DLQ topics included). */
export function checkReadableTopic(topic: string): string {
  checkName(
    "topic",
    topic,
    topic.startsWith("%RETRY%") || topic.startsWith("%DLQ%")
      ? READABLE_TOPIC_CHARS_MAX
      : TOPIC_NAME_CHARS_MAX,
  );
  return topic;
}

export function checkGroup(group: string): string {
  checkName("group", group, GROUP_NAME_CHARS_MAX);
  if (group.startsWith("%")) {
    throw new BrokerError("INVALID_NAME", `Cannot use group ${group} as % starts reserved names`);
  }
  return group;
}

function checkName(kind: string, name: string, max: number) {
  if (
    typeof name !== "string" || name.length === 0 || name.length > max || !NAME_PATTERN.test(name)
  ) {
    throw new BrokerError(
      "INVALID_NAME",
      `Cannot use ${kind} name ${
        JSON.stringify(String(name).slice(0, 200))
      } as it must be 1-${max} characters of [%|a-zA-Z0-9_-]`,
    );
  }
}

/** Strict non-negative integer parsing for query and path parameters ("12abc", "1e3", "-0" fail). */
export function parseNonNegativeInt(
  what: string,
  text: string | undefined | null,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined || text === null || text === "") return undefined;
  if (!/^\d{1,16}$/.test(text) || Number(text) > max) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot use ${what} ${
        JSON.stringify(text.slice(0, 50))
      } as it must be an integer from 0 to ${max}`,
    );
  }
  return Number(text);
}

/** User property names: a conservative token so they are safe as headers and in records. */
export const PROPERTY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Whether a stored property is one a user could have set (not a system property). */
export function isUserPropertyName(name: string): boolean {
  return PROPERTY_NAME_PATTERN.test(name) && !RESERVED_PROPERTIES.has(name.toUpperCase());
}

export function checkUserProperty(name: string, value: unknown) {
  if (
    !PROPERTY_NAME_PATTERN.test(name) || RESERVED_PROPERTIES.has(name.toUpperCase()) ||
    name.startsWith("__")
  ) {
    throw new BrokerError(
      "INVALID_PROPERTY",
      `Cannot set property ${
        JSON.stringify(name.slice(0, 80))
      }: names are 1-64 of [A-Za-z0-9_.-], not reserved (${
        [...RESERVED_PROPERTIES].slice(0, 4).join(", ")
      }, …) and not starting with __`,
    );
  }
  // deno-lint-ignore no-control-regex -- refusing control characters is the point
  if (typeof value !== "string" || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new BrokerError(
      "INVALID_PROPERTY",
      `Cannot set property ${name} as its value must be a string without control characters`,
    );
  }
}
