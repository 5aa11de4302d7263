// The copy of a message that goes back to %RETRY%{group} or %DLQ%{group}: its properties
// (origin topic, queue and offset kept from the first copy) and where it is put, through
// the timer topic when it is due later.
import {
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_ORIGIN_QUEUE_ID,
  PROPERTY_ORIGIN_QUEUE_OFFSET,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_TIMER_DELIVER_MS,
  TIMER_TOPIC,
} from "../../storage/message/message_const.ts";
import type { Cursor, Entry } from "./delivery_cursor.ts";

/** `entry`'s properties for a copy in `topic`, and the place to put it: `topic` itself, or
 * the timer topic when `at` is later than `nowMs`. */
export function retryCopy(
  cursor: Cursor,
  entry: Entry,
  topic: string,
  nowMs: number,
  at?: number,
): { place: { topic: string; queueId: number }; properties: Map<string, string> } {
  const record = entry.record;
  const properties = new Map(record.properties);
  if (!properties.has(PROPERTY_RETRY_TOPIC)) properties.set(PROPERTY_RETRY_TOPIC, record.topic);
  if (!properties.has(PROPERTY_ORIGIN_QUEUE_ID)) {
    properties.set(PROPERTY_ORIGIN_QUEUE_ID, String(cursor.queueId));
    properties.set(PROPERTY_ORIGIN_QUEUE_OFFSET, String(entry.offset));
  }
  let place = { topic, queueId: 0 };
  if (at !== undefined && at > nowMs) {
    properties.set(PROPERTY_REAL_TOPIC, topic);
    properties.set(PROPERTY_REAL_QUEUE_ID, "0");
    properties.set(PROPERTY_TIMER_DELIVER_MS, String(at));
    place = { topic: TIMER_TOPIC, queueId: 0 };
  }
  if (topic.startsWith("%DLQ%")) {
    properties.set(PROPERTY_DLQ_ORIGIN_TOPIC, properties.get(PROPERTY_RETRY_TOPIC)!);
  }
  return { place, properties };
}
