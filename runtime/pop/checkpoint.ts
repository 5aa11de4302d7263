// The checkpoint (CK) record of a received message: its JSON body, and its write to the
// timer wheel addressed to the revive topic, due when the invisible time ends.
import {
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_UNIQ_KEY,
  REVIVE_TOPIC,
  TIMER_TOPIC,
} from "../../storage/message/message_const.ts";
import type { PopDeps } from "./pop_types.ts";

/** What a CK record carries (its body, JSON). */
export interface Checkpoint {
  g: string; // group
  t: string; // topic read from (the real topic or the group's retry topic)
  q: number;
  o: number; // queue offset
  c: number; // CommitLog offset of the message
  ord?: 1; // from an orderly group: retried in place, never through the retry topic
}

export async function scheduleCheckpoint(
  deps: PopDeps,
  group: string,
  topic: string,
  q: number,
  offset: number,
  commitLogOffset: number,
  deliverMs: number,
  orderly = false,
): Promise<string> {
  const id = deps.newId();
  const ck: Checkpoint = {
    g: group,
    t: topic,
    q,
    o: offset,
    c: commitLogOffset,
    ...(orderly ? { ord: 1 as const } : {}),
  };
  await deps.store.putMessage({
    topic: TIMER_TOPIC,
    queueId: 0,
    body: new TextEncoder().encode(JSON.stringify(ck)),
    properties: new Map([
      [PROPERTY_UNIQ_KEY, id],
      [PROPERTY_REAL_TOPIC, REVIVE_TOPIC],
      [PROPERTY_REAL_QUEUE_ID, "0"],
      [PROPERTY_TIMER_DELIVER_MS, String(deliverMs)],
    ]),
    bornTimestamp: deps.nowMs(),
    bornHost: deps.storeHost,
    storeHost: deps.storeHost,
  });
  return id;
}

export function parseCheckpoint(body: Uint8Array): Checkpoint | undefined {
  try {
    const v = JSON.parse(new TextDecoder().decode(body));
    return typeof v?.g === "string" && Number.isSafeInteger(v?.c) ? v : undefined;
  } catch {
    return undefined;
  }
}
