// The allocation strategy a member asked for, built over the members that subscribe to
// the topic (allocate.ts has the strategies; this picks one and feeds it rooms and queues).
import {
  AllocateMachineRoomNearby,
  AllocateMessageQueueAveragely,
  AllocateMessageQueueAveragelyByCircle,
  AllocateMessageQueueByConfig,
  AllocateMessageQueueByMachineRoom,
  AllocateMessageQueueConsistentHash,
  type AllocateMessageQueueStrategy,
  type MessageQueue,
} from "./allocate.ts";
import type { Member } from "./membership_types.ts";

export function strategyFor(
  member: Member,
  subscribed: readonly Member[],
  mqAll: readonly MessageQueue[],
): AllocateMessageQueueStrategy {
  switch (member.strategy) {
    case "AVG":
      return new AllocateMessageQueueAveragely();
    case "AVG_BY_CIRCLE":
      return new AllocateMessageQueueAveragelyByCircle();
    case "CONSISTENT_HASH":
      return new AllocateMessageQueueConsistentHash();
    case "CONFIG": {
      const ids = new Set(member.configQueues);
      return new AllocateMessageQueueByConfig(mqAll.filter((mq) => ids.has(mq.queueId)));
    }
    case "MACHINE_ROOM":
      return new AllocateMessageQueueByMachineRoom(
        subscribed.flatMap((m) => m.room === undefined ? [] : [m.room]),
      );
    case "MACHINE_ROOM_NEARBY": {
      const rooms = new Map(subscribed.map((m) => [m.clientId, m.room]));
      return new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(), {
        brokerDeployIn: (mq) => roomOfBroker(mq.brokerName),
        consumerDeployIn: (clientId) => rooms.get(clientId),
      });
    }
  }
}

/** `room@broker` → room; a name without one has no room. */
function roomOfBroker(brokerName: string): string | undefined {
  const at = brokerName.indexOf("@");
  return at > 0 ? brokerName.slice(0, at) : undefined;
}
