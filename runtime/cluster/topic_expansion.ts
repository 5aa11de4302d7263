// Expansion and drain of a topic over broker groups (docs/cluster.md):
// - add: the group joins with a new slot (never a reused one); the topic is created there
//   with the settings of one of its groups. A draining group that is added again becomes
//   active and writable again.
// - drain: the record says draining (routers stop producing there once their cache
//   expires) and the group's topic turns read-only (the broker itself refuses writes now).
// - remove: only a draining group with nothing owed there (drain status: every consumer
//   group of the topic, POP in flight, retries, delayed messages, open transactions),
//   checked again inside the compare-and-set (still the same drain), unless forced (what
//   is owed there is lost); the group leaves the record (its slot is never reused) and the
//   topic is deleted there.
import { BrokerError } from "../protocol/errors.ts";
import { PERM_READ, PERM_WRITE } from "../protocol/types.ts";
import { checkQueueCountsOnGroup, checkSlot } from "../protocol/cluster_types.ts";
import type { TopicRouteGroup, TopicRouteRecord } from "./route_record.ts";
import type { GroupLink, ResolvedTopicRoute } from "./route_source.ts";
import type { LiveGroups } from "./route_join.ts";
import type { TopicRecords } from "./topic_records.ts";
import { drainStatusOf, owedText, refuseWithSchedules } from "./drain_check.ts";
import { copyTopicConsumers } from "./topic_join_copy.ts";
import { moveSchedules } from "./schedule_move.ts";

/** What the admin needs of the route source (KvClusterRouteSource fits). */
export interface AdminRouteSource {
  readonly records: TopicRecords;
  live(): Promise<LiveGroups>;
  topic(
    topic: string,
    options?: { create?: boolean; fresh?: boolean },
  ): Promise<ResolvedTopicRoute>;
  invalidate(topic?: string): void;
}

export async function addTopicGroup(
  source: AdminRouteSource,
  topic: string,
  brokerGroup: string,
): Promise<void> {
  const link = await liveLink(source, brokerGroup);
  const record = await recordOf(source, topic);
  const member = record.groups.find((g) => g.brokerGroup === brokerGroup);
  if (member?.state === "active") return;
  if (!member) checkSlot(topic, record.nextSlot);
  const { model, settings } = await templateOf(source, topic, record, brokerGroup);
  checkQueueCountsOnGroup(topic, settings);
  await link.client.upsertTopic(topic, { ...settings, perm: settings.perm | PERM_WRITE });
  // Consumers first: the record below is what makes routers write to the group.
  if (model) await copyTopicConsumers(model, link, topic);
  await source.records.update(topic, (current) => {
    if (!current) throw notFound(topic);
    const at = current.groups.findIndex((g) => g.brokerGroup === brokerGroup);
    if (at >= 0) {
      if (current.groups[at].state === "active") return undefined;
      return withGroup(current, at, { ...current.groups[at], state: "active" });
    }
    checkSlot(topic, current.nextSlot);
    return {
      ...current,
      groups: [...current.groups, { brokerGroup, slot: current.nextSlot, state: "active" }],
      nextSlot: current.nextSlot + 1,
    };
  });
  await settlePerm(source, link, topic, brokerGroup);
}

export async function drainTopicGroup(
  source: AdminRouteSource,
  topic: string,
  brokerGroup: string,
): Promise<void> {
  const link = await liveLink(source, brokerGroup);
  const before = await recordOf(source, topic);
  const at = memberAt(before, topic, brokerGroup);
  // Where a new schedule of the topic goes once this group drains: its schedules go there.
  const heir = before.groups.filter((g, i) => i !== at && g.state === "active")
    .map((g) => g.brokerGroup).sort()[0];
  if (heir === undefined && before.groups[at].state !== "draining") {
    throw lastActive(topic, brokerGroup);
  }
  if (heir !== undefined) await moveSchedules(link, await liveLink(source, heir), topic);
  const drainId = crypto.randomUUID();
  await source.records.update(topic, (current) => {
    const at = memberAt(current, topic, brokerGroup);
    if (current!.groups[at].state === "draining") return undefined;
    if (!current!.groups.some((g, i) => i !== at && g.state === "active")) {
      throw lastActive(topic, brokerGroup);
    }
    return withGroup(current!, at, { ...current!.groups[at], state: "draining", drainId });
  });
  await link.client.upsertTopic(topic, { perm: PERM_READ });
  await settlePerm(source, link, topic, brokerGroup);
}

/** After add or drain set the group's topic perm: an add or drain whose compare-and-set
 * came in between decided the state, so the perm follows the record as it is now (add and
 * drain of one group serialize through the record). */
async function settlePerm(
  source: AdminRouteSource,
  link: GroupLink,
  topic: string,
  brokerGroup: string,
): Promise<void> {
  const now = (await source.records.get(topic))?.groups.find((g) => g.brokerGroup === brokerGroup);
  if (!now) return;
  const perm = (await link.client.getTopic(topic)).perm;
  const want = now.state === "active" ? perm | PERM_WRITE : perm & ~PERM_WRITE;
  if (want !== perm) await link.client.upsertTopic(topic, { perm: want });
}

export async function removeTopicGroup(
  source: AdminRouteSource,
  topic: string,
  brokerGroup: string,
  force: boolean,
): Promise<void> {
  const record = await recordOf(source, topic);
  const member = record.groups[memberAt(record, topic, brokerGroup)];
  const { links } = await source.live();
  const link = links.find((l) => l.name === brokerGroup);
  if (!force) await checkDrained(topic, member, record, links);
  await source.records.update(topic, (current) => {
    const at = memberAt(current, topic, brokerGroup);
    const now = current!.groups[at];
    if (!force && (now.state !== "draining" || now.drainId !== member.drainId)) {
      throw new BrokerError(
        "BROKER_GROUP_NOT_DRAINED",
        `Cannot remove broker group ${brokerGroup} from topic ${topic}: it was added or drained again while its drain was checked; check again`,
      );
    }
    if (current!.groups.length === 1) {
      throw new BrokerError(
        "TOPIC_ROUTE_CONFLICT",
        `Cannot remove broker group ${brokerGroup}: it is the last group of topic ${topic} (delete the topic instead)`,
      );
    }
    return { ...current!, groups: current!.groups.filter((_, i) => i !== at) };
  });
  await link?.client.deleteTopic(topic).catch((err) => {
    if (!(err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND")) throw err;
  });
}

/** Refuses the removal while the group is not draining, its topic is still writable there,
 * or anything is still owed there (drain status: every consumer group of the topic). */
async function checkDrained(
  topic: string,
  member: TopicRouteGroup,
  record: TopicRouteRecord,
  links: GroupLink[],
): Promise<void> {
  const brokerGroup = member.brokerGroup;
  if (member.state !== "draining") {
    throw new BrokerError(
      "BROKER_GROUP_NOT_DRAINED",
      `Cannot remove broker group ${brokerGroup} from topic ${topic}: drain it first (POST /v1/topics/${topic}/route/groups/${brokerGroup}/drain), or force`,
    );
  }
  const link = links.find((l) => l.name === brokerGroup);
  if (!link) {
    throw new BrokerError(
      "BROKER_UNAVAILABLE",
      `Cannot tell whether broker group ${brokerGroup} is drained: it is not live; force to remove it anyway (its messages are lost)`,
    );
  }
  if (((await link.client.getTopic(topic)).perm & PERM_WRITE) !== 0) {
    throw new BrokerError(
      "BROKER_GROUP_NOT_DRAINED",
      `Cannot remove broker group ${brokerGroup} from topic ${topic}: the topic is still writable there (its drain did not finish); drain it again`,
    );
  }
  await refuseWithSchedules(link, topic, "remove");
  const members = new Set(record.groups.map((g) => g.brokerGroup));
  const others = links.filter((l) => l.name !== brokerGroup && members.has(l.name));
  const status = await drainStatusOf(link, others, topic);
  if (!status.drained) {
    throw new BrokerError(
      "BROKER_GROUP_NOT_DRAINED",
      `Cannot remove broker group ${brokerGroup} from topic ${topic}: still owed there: ${
        owedText(status)
      }`,
      { owed: status },
    );
  }
}

function lastActive(topic: string, brokerGroup: string): BrokerError {
  return new BrokerError(
    "TOPIC_ROUTE_CONFLICT",
    `Cannot drain broker group ${brokerGroup}: it is the last active group of topic ${topic} (add another first)`,
  );
}

async function liveLink(source: AdminRouteSource, brokerGroup: string): Promise<GroupLink> {
  source.invalidate();
  const { links } = await source.live();
  const link = links.find((l) => l.name === brokerGroup);
  if (!link) {
    throw new BrokerError(
      "BROKER_GROUP_NOT_FOUND",
      `No live broker group ${brokerGroup} in this cluster (live: ${
        links.map((l) => l.name).join(", ") || "none"
      })`,
    );
  }
  return link;
}

/** The topic's record; synthesized first when groups hold the topic without one. */
async function recordOf(source: AdminRouteSource, topic: string): Promise<TopicRouteRecord> {
  source.invalidate(topic);
  await source.topic(topic);
  const record = await source.records.get(topic);
  if (!record) throw notFound(topic);
  return record;
}

function memberAt(record: TopicRouteRecord | undefined, topic: string, group: string): number {
  if (!record) throw notFound(topic);
  const at = record.groups.findIndex((g) => g.brokerGroup === group);
  if (at < 0) {
    throw new BrokerError(
      "BROKER_GROUP_NOT_FOUND",
      `Broker group ${group} is not in the route of topic ${topic} (its groups: ${
        record.groups.map((g) => g.brokerGroup).join(", ")
      })`,
    );
  }
  return at;
}

function withGroup(r: TopicRouteRecord, at: number, g: TopicRouteGroup): TopicRouteRecord {
  return { ...r, groups: r.groups.map((old, i) => i === at ? g : old) };
}

/** Settings for a joining group: those of an active group of the topic (not itself). */
async function templateOf(
  source: AdminRouteSource,
  topic: string,
  record: TopicRouteRecord,
  brokerGroup: string,
) {
  const { links } = await source.live();
  const others = record.groups.filter((g) => g.brokerGroup !== brokerGroup)
    .sort((a, b) => (a.state === "active" ? 0 : 1) - (b.state === "active" ? 0 : 1));
  for (const g of others) {
    const link = links.find((l) => l.name === g.brokerGroup);
    if (!link) continue;
    const { readQueueNums, writeQueueNums, perm, order } = await link.client.getTopic(topic);
    return { model: link, settings: { readQueueNums, writeQueueNums, perm, order } };
  }
  return { model: undefined, settings: { perm: PERM_READ | PERM_WRITE } };
}

function notFound(topic: string): BrokerError {
  return new BrokerError("TOPIC_NOT_FOUND", `No topic ${topic} in this cluster`);
}
