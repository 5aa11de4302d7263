// A consumer's own verdict that a received message is dead (RocketMQ 5's
// ForwardMessageToDeadLetterQueue, which FIFO push consumers call after their local
// retries): the message goes to %DLQ%{group} as the revive loop buries it (pop/requeue.ts:
// same id, body and properties, original topic kept), then its receipt handle is acked.
import type { MessageStore } from "../../storage/message_store.ts";
import { BrokerError } from "../protocol/errors.ts";
import { bury } from "../pop/requeue.ts";
import type { Checkpoint } from "../pop/checkpoint.ts";
import type { GroupRegistry } from "./group_registry.ts";

export interface DeadLetterForwardDeps {
  store: MessageStore;
  /** The checkpoint of an in-flight handle of `group`, else the handle's typed error. */
  checkpointOf(group: string, handle: string): Checkpoint;
  groups: GroupRegistry;
  storeHost: { ip: Uint8Array; port: number };
  ack(group: string, handle: string): Promise<void>;
}

export async function forwardToDlq(
  d: DeadLetterForwardDeps,
  group: string,
  handle: string,
): Promise<void> {
  await d.groups.existing(group);
  const ck = d.checkpointOf(group, handle);
  const record = d.store.lookMessageByOffset(ck.c);
  if (!record) {
    throw new BrokerError(
      "MESSAGE_NOT_FOUND",
      `Cannot dead-letter the message of ${handle}: it is no longer in the CommitLog`,
    );
  }
  await bury(d, group, record, record.reconsumeTimes);
  await d.ack(group, handle);
}
