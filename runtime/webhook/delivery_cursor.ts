// One queue's read-ahead for a webhook subscription: the window of entries read from the
// group's committed offset, their states, and which entry may start next.
import { PROPERTY_UNIQ_KEY } from "../../storage/message/message_const.ts";
import type { MessageRecord } from "../../storage/message/record.ts";

type EntryState = "waiting" | "inflight" | "settled";

export interface Entry {
  offset: number;
  record: MessageRecord;
  /** messageIdOf(record): the webhook-id of every attempt. */
  id: string;
  key: string;
  state: EntryState;
  /** Failed attempts made in place (ordered mode). */
  failures: number;
  /** Not started again before this time (ordered backoff, store retry). */
  notBefore: number;
}

export class Cursor {
  /** Read-ahead, in queue order; settled entries leave from the front. */
  window: Entry[] = [];
  committed: number;
  constructor(
    readonly topic: string,
    readonly queueId: number,
    readonly retry: boolean,
    public next: number,
  ) {
    this.committed = next;
  }

  get commitOffset(): number {
    return this.window.length > 0 ? this.window[0].offset : this.next;
  }
}

/** The next entry of this cursor that may start now, or when one could. */
export function startable(
  cursor: Cursor,
  ordered: boolean,
  now: number,
): { entry?: Entry; wakeAt: number } {
  let wakeAt = Infinity;
  const blocked = ordered ? new Set<string>() : undefined;
  for (const entry of cursor.window) {
    if (entry.state === "settled") continue;
    if (blocked) {
      if (blocked.has(entry.key)) continue;
      blocked.add(entry.key);
    }
    if (entry.state !== "waiting") continue;
    if (entry.notBefore > now) {
      wakeAt = Math.min(wakeAt, entry.notBefore);
      continue;
    }
    return { entry, wakeAt };
  }
  return { wakeAt };
}

/** The message id (UNIQ_KEY) the producer got; the webhook-id of every attempt. */
export function messageIdOf(record: MessageRecord): string {
  return record.properties.get(PROPERTY_UNIQ_KEY) ??
    record.physicalOffset.toString(16).toUpperCase().padStart(16, "0");
}
