// A topic's route record joined with the live groups: each group of the record that is
// live, with its queue counts and perm. They come from the group's registration (up to
// routeHeartbeatMs old); `fresh` (the admin's reads, after a change) asks every group, and
// so does a topic created there since its last heartbeat,
// and with `create` an active group that lacks the topic gets it (the broker's default
// queue counts). A group that cannot be asked is left out, like one that is not live; when
// that leaves none, the topic is BROKER_UNAVAILABLE.
import type { TopicRouteRecord } from "./route_record.ts";
import type { ResolvedGroup, ResolvedTopicRoute } from "./route_source.ts";
import type { GroupLink } from "./route_source.ts";
import type { RouteEntry } from "../protocol/routes.ts";
import { BrokerError } from "../protocol/errors.ts";
import { groupQueues, type QueueShape } from "./route_view.ts";
import { QUEUE_ID_STRIDE, TOPIC_SLOTS_MAX } from "../protocol/cluster_types.ts";
import type { Logger } from "../log.ts";

/** The live groups: their registrations and links, index for index, sorted by name. */
export interface LiveGroups {
  entries: RouteEntry[];
  links: GroupLink[];
}

export async function joinRoute(
  record: TopicRouteRecord,
  live: LiveGroups,
  options: { create: boolean; fresh?: boolean; log?: Logger },
): Promise<ResolvedTopicRoute> {
  const topic = record.topic;
  const groups: ResolvedGroup[] = [];
  /** Why groups were left out: not live, or what asking them said. */
  const missing: string[] = [];
  const sorted = [...record.groups].sort((a, b) => a.slot - b.slot);
  await Promise.all(sorted.map(async (g) => {
    const i = live.links.findIndex((l) => l.name === g.brokerGroup);
    if (i < 0) return void missing.push(`${g.brokerGroup}: not live`);
    const registered = options.fresh
      ? undefined
      : live.entries[i].topics.find((t) => t.name === topic);
    const create = options.create && g.state === "active";
    const shape = registered ?? await askGroup(live.links[i], topic, create).catch((err) => {
      missing.push(`${g.brokerGroup}: ${(err as Error).message}`);
      return undefined;
    });
    if (!shape) return;
    const fits = withinSlot(topic, g.brokerGroup, g.slot, pick(shape), options.log);
    if (fits) groups.push({ link: live.links[i], slot: g.slot, state: g.state, ...fits });
  }));
  groups.sort((a, b) => a.slot - b.slot);
  if (groups.length === 0 && record.groups.length > 0) {
    // None of its groups is live or answers (a lone group failing over): as a single
    // broker's functions say, so callers retry instead of hearing "no such queue".
    throw new BrokerError(
      "BROKER_UNAVAILABLE",
      `No broker group of topic ${topic} can be reached: ${missing.join("; ")}`,
    );
  }
  return {
    topic,
    groups,
    ...(record.order && { order: true }),
    view: {
      topic,
      brokerGroups: groups.map((g) => ({
        name: g.link.name,
        url: g.link.url,
        epoch: g.link.epoch,
        state: g.state,
        slot: g.slot,
      })),
      queues: groups.flatMap((g) => groupQueues(g.link.name, g.slot, g.state, g)),
    },
  };
}

const EMPTY: QueueShape = { readQueueNums: 0, writeQueueNums: 0, perm: 0 };

/** The group's queue counts of `topic`; throws what the group answered when it cannot
 * say (unreachable, not the leader, a refused creation). */
async function askGroup(link: GroupLink, topic: string, create: boolean): Promise<QueueShape> {
  try {
    return await link.client.getTopic(topic);
  } catch (err) {
    if (!(err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND")) throw err;
    if (!create) return EMPTY;
    return await link.client.upsertTopic(topic, {});
  }
}

/** A group's queues as far as its slot holds them: queues past QUEUE_ID_STRIDE (a broker
 * topic made bigger than a cluster topic may be) and slots past TOPIC_SLOTS_MAX are left
 * out of the route, with a warning, rather than collide with another group's ids. */
function withinSlot(
  topic: string,
  brokerGroup: string,
  slot: number,
  s: QueueShape,
  log?: Logger,
): QueueShape | undefined {
  if (slot >= TOPIC_SLOTS_MAX) {
    log?.("warn", "route: a slot past TOPIC_SLOTS_MAX is left out", { topic, brokerGroup, slot });
    return undefined;
  }
  if (Math.max(s.readQueueNums, s.writeQueueNums) <= QUEUE_ID_STRIDE) return s;
  log?.("warn", "route: queues past QUEUE_ID_STRIDE are left out", {
    topic,
    brokerGroup,
    readQueueNums: s.readQueueNums,
    writeQueueNums: s.writeQueueNums,
  });
  return {
    ...s,
    readQueueNums: Math.min(s.readQueueNums, QUEUE_ID_STRIDE),
    writeQueueNums: Math.min(s.writeQueueNums, QUEUE_ID_STRIDE),
  };
}

function pick(s: QueueShape): QueueShape {
  return { readQueueNums: s.readQueueNums, writeQueueNums: s.writeQueueNums, perm: s.perm };
}
