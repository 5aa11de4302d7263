// What one in-flight POP message is: where it was read (its checkpoint, CK), its receipt
// handle and deadline. A receive writes one CK record for its whole batch (pop_log.ts);
// the live entries are kept in memory (checkpoints.ts).
import type { HeapItem } from "./deadline_heap.ts";

/** Where a received message was read. */
export interface Checkpoint {
  g: string; // group
  t: string; // topic read from (the real topic or the group's retry topic)
  q: number;
  o: number; // queue offset
  c: number; // CommitLog offset of the message
  ord?: 1; // from an orderly group: retried in place, never through the retry topic
}

/** One CK record of the revive topic: its queue offset (-1 while being written) and how
 * many of its messages are still in flight. Recovery starts at the oldest with any. */
export interface CkSlot {
  offset: number;
  live: number;
}

/** A received message not yet settled: in the handle map and the deadline heap. */
export interface InFlight extends Checkpoint, HeapItem {
  h: string; // receipt handle
  ck: CkSlot;
}
