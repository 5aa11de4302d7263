// Checks of outside input to ConsumerMembership: heartbeats, group and topic names, queue
// ids. Each refuses with a MembershipError; a heartbeat that passes becomes a Member.
import {
  type HeartbeatData,
  type Member,
  MembershipError,
  type MembershipErrorCode,
  STRATEGY_NAMES,
  type Subscription,
} from "./membership_types.ts";

/** A bound per member: RocketMQ has none, but a heartbeat is outside input. */
export const SUBSCRIPTIONS_PER_MEMBER_MAX = 64;
/** CONFIG queue ids per member and queue ids per lock() call. */
export const QUEUE_IDS_MAX = 1024;
const CLIENT_ID_CHARS_MAX = 255;
const NAME_CHARS_MAX = 255; // %RETRY%group topics reach 255 (checkReadableTopic)
const TAGS_CHARS_MAX = 4096; // tag expressions and SQL92 filters
const QUEUE_ID_MAX = 2 ** 31 - 1; // Java int
const NAME_PATTERN = /^[%|a-zA-Z0-9_-]+$/; // protocol/names.ts
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

export function parseHeartbeat(data: HeartbeatData, nowMs: number): Member {
  const clientId = data?.clientId;
  if (
    typeof clientId !== "string" || clientId.length > CLIENT_ID_CHARS_MAX ||
    !VISIBLE_ASCII.test(clientId)
  ) {
    throw new MembershipError(
      "CLIENT_ID_ILLEGAL",
      `Cannot register client id ${
        JSON.stringify(String(clientId).slice(0, 80))
      } as it must be 1-${CLIENT_ID_CHARS_MAX} visible ASCII characters`,
    );
  }
  const strategy = data.strategy ?? "AVG";
  if (!(STRATEGY_NAMES as readonly string[]).includes(strategy)) {
    throw strategyError(clientId, `strategy ${JSON.stringify(String(strategy).slice(0, 40))}`);
  }
  const room = data.room;
  if (room !== undefined && (typeof room !== "string" || !NAME_PATTERN.test(room))) {
    throw strategyError(clientId, `room ${JSON.stringify(String(room).slice(0, 40))}`);
  }
  if ((strategy === "MACHINE_ROOM" || strategy === "MACHINE_ROOM_NEARBY") && !room) {
    throw strategyError(clientId, `strategy ${strategy} without a room`);
  }
  let configQueues: number[];
  try {
    configQueues = checkQueueIds(data.configQueues ?? []);
  } catch {
    throw strategyError(clientId, "configQueues");
  }
  return {
    clientId,
    subscriptions: parseSubscriptions(clientId, data.subscriptions),
    strategy,
    room,
    configQueues,
    lastHeartbeatMs: nowMs,
  };
}

function strategyError(clientId: string, what: string): MembershipError {
  return new MembershipError(
    "STRATEGY_ILLEGAL",
    `Cannot register client ${clientId} with ${what}: strategies are ${
      STRATEGY_NAMES.join(", ")
    }, rooms 1-${NAME_CHARS_MAX} of [%|a-zA-Z0-9_-] (MACHINE_ROOM* need one), configQueues up to ${QUEUE_IDS_MAX} ids`,
  );
}

function parseSubscriptions(
  clientId: string,
  subscriptions: readonly Subscription[],
): Map<string, string> {
  const refuse = (why: string) =>
    new MembershipError(
      "SUBSCRIPTION_ILLEGAL",
      `Cannot register client ${clientId} as its subscriptions ${why}`,
    );
  if (!Array.isArray(subscriptions)) throw refuse("are not a list");
  if (subscriptions.length > SUBSCRIPTIONS_PER_MEMBER_MAX) {
    throw refuse(`exceed ${SUBSCRIPTIONS_PER_MEMBER_MAX}: ${subscriptions.length}`);
  }
  const byTopic = new Map<string, string>();
  for (const s of subscriptions) {
    const topic = s?.topic;
    if (!isName(topic)) throw refuse(`name topic ${JSON.stringify(String(topic).slice(0, 80))}`);
    if (byTopic.has(topic)) throw refuse(`name topic ${topic} twice`);
    const tags = s.tags ?? "*";
    if (typeof tags !== "string" || tags.length === 0 || tags.length > TAGS_CHARS_MAX) {
      throw refuse(`give topic ${topic} tags that are not 1-${TAGS_CHARS_MAX} characters`);
    }
    byTopic.set(topic, tags);
  }
  return byTopic;
}

export function sameMember(a: Member, b: Member): boolean {
  return a.strategy === b.strategy && a.room === b.room &&
    a.configQueues.join() === b.configQueues.join() &&
    a.subscriptions.size === b.subscriptions.size &&
    [...a.subscriptions].every(([topic, tags]) => b.subscriptions.get(topic) === tags);
}

function isName(name: unknown): name is string {
  return typeof name === "string" && name.length <= NAME_CHARS_MAX && NAME_PATTERN.test(name);
}

export function checkName(code: MembershipErrorCode, kind: string, name: string): void {
  if (!isName(name)) {
    throw new MembershipError(
      code,
      `Cannot use ${kind} name ${
        JSON.stringify(String(name).slice(0, 80))
      } as it must be 1-${NAME_CHARS_MAX} characters of [%|a-zA-Z0-9_-]`,
    );
  }
}

/** Distinct, ascending; each a Java int >= 0, at most QUEUE_IDS_MAX of them. */
export function checkQueueIds(queueIds: readonly number[]): number[] {
  if (
    !Array.isArray(queueIds) || queueIds.length > QUEUE_IDS_MAX ||
    !queueIds.every((id) => Number.isInteger(id) && id >= 0 && id <= QUEUE_ID_MAX)
  ) {
    throw new MembershipError(
      "QUEUE_ID_ILLEGAL",
      `Cannot use queue ids ${
        JSON.stringify(String(queueIds).slice(0, 80))
      } as they must be up to ${QUEUE_IDS_MAX} integers from 0 to ${QUEUE_ID_MAX}`,
    );
  }
  return [...new Set(queueIds)].sort((a, b) => a - b);
}
