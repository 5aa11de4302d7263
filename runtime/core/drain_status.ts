// Drain status: what is still owed on a topic on this broker, so that a cluster router may
// remove this broker group from the topic's route without losing a message (docs/cluster.md,
// Drain and remove). Per consumer group: unconsumed messages of the topic's queues here (all
// of them from the min offset when the group holds no position here), POP messages in
// flight, its %RETRY% backlog; then delayed/timer messages and open transaction halves.
import type { MessageStore } from "../../storage/message_store.ts";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import type { DrainOwed, DrainStatus } from "../protocol/ops_types.ts";
import { popOffsetGroupOf, retryTopicOf } from "../pop/group_topics.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { TopicRegistry } from "./topic_registry.ts";
import type { BrokerParts } from "./compose.ts";

export interface DrainStatusDeps {
  store: MessageStore;
  offsets: ConsumerOffsetStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  brokerName: string;
  /** Groups subscribed to the topic here: live members' subscriptions, webhook ones. */
  subscribers(topic: string): string[];
  popInFlight(group: string, topics: ReadonlySet<string>): number;
  openHalves(topic: string): number;
  /** Delayed (delay levels) and timer messages waiting, all topics. */
  delayed(): number;
}

/** The drain status of `topic` here, for its subscribers, the groups holding a position in
 * it here, and `groups` (those known elsewhere: the cluster router passes the consumer
 * groups of the topic's other broker groups). */
export async function drainStatus(
  d: DrainStatusDeps,
  topic: string,
  groups: readonly string[] = [],
): Promise<DrainStatus> {
  const config = await d.topics.get(topic);
  const queues = Math.max(config.readQueueNums, config.writeQueueNums);
  const names = new Set([...groups, ...d.subscribers(topic)]);
  for (const g of d.groups.list()) if (holdsPosition(d, g.group, topic)) names.add(g.group);
  const owed: DrainOwed[] = [];
  for (const group of [...names].sort()) {
    const retryTopic = retryTopicOf(group);
    const unconsumed = sumLag(d, group, topic, queues);
    const retry = sumLag(d, group, retryTopic, retryQueues(d, retryTopic));
    const inFlight = d.popInFlight(group, new Set([topic, retryTopic]));
    if (unconsumed + retry + inFlight > 0) owed.push({ group, unconsumed, inFlight, retry });
  }
  const delayed = d.delayed();
  const openTransactions = d.openHalves(topic);
  return {
    topic,
    brokerGroup: d.brokerName,
    consumers: [...names].sort(),
    groups: owed,
    delayed,
    openTransactions,
    drained: owed.length === 0 && delayed === 0 && openTransactions === 0,
  };
}

function holdsPosition(d: DrainStatusDeps, group: string, topic: string): boolean {
  return d.offsets.queryAll(group, topic).size > 0 ||
    d.offsets.queryAll(popOffsetGroupOf(group), topic).size > 0;
}

/** Queues of the group's retry topic (1, RocketMQ's retryQueueNums, until it exists). */
function retryQueues(d: DrainStatusDeps, retryTopic: string): number {
  const c = d.topics.configs().find((t) => t.name === retryTopic);
  return c ? Math.max(c.readQueueNums, c.writeQueueNums, 1) : 1;
}

/** Messages of `topic` past the group's position (pop offset, else committed, else the
 * queue's min offset: a group with no position here is owed the whole queue). */
function sumLag(d: DrainStatusDeps, group: string, topic: string, queues: number): number {
  let lag = 0;
  for (let q = 0; q < queues; q++) {
    const min = d.store.getMinOffsetInQueue(topic, q);
    const max = d.store.getMaxOffsetInQueue(topic, q);
    const at = d.offsets.query(popOffsetGroupOf(group), topic, q) ??
      d.offsets.query(group, topic, q) ?? min;
    lag += Math.max(0, max - Math.max(at, min));
  }
  return lag;
}

/** The broker's drainStatus call over its parts. */
export function drainStatusOf(parts: BrokerParts, brokerName: string) {
  const d: DrainStatusDeps = {
    store: parts.store,
    offsets: parts.offsets,
    topics: parts.topics,
    groups: parts.groups,
    brokerName,
    subscribers: (topic) => [
      ...parts.membership.subscribedGroups(topic),
      ...parts.webhooks.list().filter((s) => s.topic === topic).map((s) => s.group),
    ],
    popInFlight: (group, topics) => parts.pop.inFlightOf(group, topics),
    openHalves: (topic) => parts.transactions.openHalves(topic),
    delayed: () => parts.timers.pending + parts.schedule.pending().reduce((s, n) => s + n, 0),
  };
  return (topic: string, groups?: string[]) => drainStatus(d, topic, groups);
}
