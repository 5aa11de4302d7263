// Retry and DLQ routing: a message not acked in time goes back as a copy into
// %RETRY%{group} with reconsumeTimes + 1, or past retryMaxTimes into %DLQ%{group}.
import {
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_RETRY_TOPIC,
} from "../../storage/message/message_const.ts";
import type { MessageRecord } from "../../storage/message/record.ts";
import { dlqTopicOf, retryTopicOf } from "./group_topics.ts";
import type { PopDeps } from "./pop_types.ts";

/** What a copy needs: where to put it and the store host it carries. */
type CopyDeps = Pick<PopDeps, "store" | "storeHost">;

/** Past retryMaxTimes: to %DLQ%{group}, keeping id, body, properties, original topic. */
export function bury(
  deps: CopyDeps,
  group: string,
  original: MessageRecord,
  reconsumeTimes: number,
): Promise<unknown> {
  return requeue(deps, group, original, reconsumeTimes, true);
}

export function requeue(
  deps: CopyDeps,
  group: string,
  original: MessageRecord,
  reconsumeTimes: number,
  dead: boolean,
): Promise<unknown> {
  const properties = new Map(original.properties);
  if (!properties.has(PROPERTY_RETRY_TOPIC)) properties.set(PROPERTY_RETRY_TOPIC, original.topic);
  if (dead) properties.set(PROPERTY_DLQ_ORIGIN_TOPIC, properties.get(PROPERTY_RETRY_TOPIC)!);
  return deps.store.putMessage({
    topic: dead ? dlqTopicOf(group) : retryTopicOf(group),
    queueId: 0,
    body: original.body,
    flag: original.flag,
    properties,
    bornTimestamp: original.bornTimestamp,
    bornHost: original.bornHost,
    storeHost: deps.storeHost,
    reconsumeTimes,
  });
}
