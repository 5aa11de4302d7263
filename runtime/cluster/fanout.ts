// Calling several broker groups for one request: all at once (broadcast writes, merged
// views), or one after another until one has the thing (find by id, a schedule by id).
import { BrokerError, type ProblemCode } from "../protocol/errors.ts";
import type { GroupLink } from "./route_source.ts";
import type { ClusterContext } from "./context.ts";
import { forGroup } from "./group_provision.ts";
import { isGroupFailure } from "./fault.ts";

export interface Answer<T> {
  link: GroupLink;
  value: T;
}

/**
 * Every group at once. A group answering one of `absent` (e.g. GROUP_NOT_FOUND on a group
 * that never saw the group) is left out of the answers; any other failure fails the whole
 * call, so a broadcast write is never half done in silence and a merged view never hides a
 * group (the caller retries; the failed group is in backoff and its route re-read). With
 * `consumerGroup`, a group missing it gets it first (group_provision.ts).
 */
export async function fanOut<T>(
  ctx: ClusterContext,
  links: readonly GroupLink[],
  topic: string | undefined,
  f: (client: GroupLink["client"], link: GroupLink) => Promise<T>,
  absent: readonly ProblemCode[] = [],
  consumerGroup?: string,
): Promise<Answer<T>[]> {
  const settled = await settleAll(ctx, links, topic, f, consumerGroup);
  const answers: Answer<T>[] = [];
  let absentError: unknown;
  for (let i = 0; i < settled.length; i++) {
    const s = settled[i];
    if (s.status === "fulfilled") answers.push({ link: links[i], value: s.value });
    else if (s.reason instanceof BrokerError && absent.includes(s.reason.code)) {
      absentError ??= s.reason;
    } else throw s.reason;
  }
  if (answers.length === 0 && absentError !== undefined) throw absentError;
  if (links.length === 0) {
    throw new BrokerError("BROKER_UNAVAILABLE", "No broker group is live in this cluster");
  }
  return answers;
}

/** `f` on every link at once (through forGroup when a consumer group is named). */
function settleAll<T>(
  ctx: ClusterContext,
  links: readonly GroupLink[],
  topic: string | undefined,
  f: (client: GroupLink["client"], link: GroupLink) => Promise<T>,
  consumerGroup: string | undefined,
): Promise<PromiseSettledResult<T>[]> {
  return Promise.allSettled(
    links.map((link) =>
      consumerGroup === undefined
        ? ctx.call(link, topic, (c) => f(c, link))
        : forGroup(ctx, link, topic, consumerGroup, (c) => f(c, link))
    ),
  );
}

/**
 * A broadcast write that tolerates live-but-failing groups: it succeeds when at least one
 * group took it. Groups that failed as groups (unreachable, not the leader, a 5xx: in
 * failover) are reported through the router's log and left for the next call (heartbeats
 * repeat every few seconds; a consumer group missing on a group is copied there on first
 * use, group_provision.ts; check settings and webhook subscriptions must be sent
 * again: docs/cluster.md). A refusal (4xx other than `absent`) still fails the call: the
 * request is wrong, not a group. Nothing taken anywhere: the first error.
 */
export async function broadcast<T>(
  ctx: ClusterContext,
  what: string,
  links: readonly GroupLink[],
  topic: string | undefined,
  f: (client: GroupLink["client"], link: GroupLink) => Promise<T>,
  options: { absent?: readonly ProblemCode[]; consumerGroup?: string } = {},
): Promise<Answer<T>[]> {
  const { absent = [], consumerGroup } = options;
  const settled = await settleAll(ctx, links, topic, f, consumerGroup);
  const answers: Answer<T>[] = [];
  const missed: { link: GroupLink; err: unknown }[] = [];
  let absentError: unknown;
  for (let i = 0; i < settled.length; i++) {
    const s = settled[i];
    if (s.status === "fulfilled") answers.push({ link: links[i], value: s.value });
    else if (s.reason instanceof BrokerError && absent.includes(s.reason.code)) {
      absentError ??= s.reason;
    } else if (isGroupFailure(s.reason)) missed.push({ link: links[i], err: s.reason });
    else throw s.reason;
  }
  if (answers.length === 0) {
    throw absentError ?? missed[0]?.err ??
      new BrokerError("BROKER_UNAVAILABLE", "No broker group is live in this cluster");
  }
  if (missed.length > 0) ctx.partialBroadcast(what, answers.map((a) => a.link), missed);
  return answers;
}

/**
 * One group after another (`links` in order of preference) until one answers; `notFound`
 * (and a failed group) moves on, any other refusal is the answer. All missing: the first
 * notFound error, else the first group failure.
 */
export async function firstFound<T>(
  ctx: ClusterContext,
  links: readonly GroupLink[],
  topic: string | undefined,
  notFound: ProblemCode,
  f: (client: GroupLink["client"], link: GroupLink) => Promise<T>,
): Promise<Answer<T>> {
  let missing: unknown;
  let failure: unknown;
  for (const link of links) {
    try {
      return { link, value: await ctx.call(link, topic, (c) => f(c, link)) };
    } catch (err) {
      if (err instanceof BrokerError && err.code === notFound) missing ??= err;
      else if (isGroupFailure(err)) failure ??= err;
      else throw err;
    }
  }
  throw missing ?? failure ??
    new BrokerError("BROKER_UNAVAILABLE", "No broker group is live in this cluster");
}

/** The first live group by name: where single-copy reads go (group settings, check URLs). */
export function firstLive(links: readonly GroupLink[]): GroupLink {
  if (links.length === 0) {
    throw new BrokerError("BROKER_UNAVAILABLE", "No broker group is live in this cluster");
  }
  return links[0];
}
