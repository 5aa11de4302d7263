// A long poll over several broker groups (POP receive, transaction checks), as RocketMQ 5's
// proxy serves one: sweep every group without waiting, starting at a group that rotates
// per call (so none starves while the first ones always have something), then hold one
// group (rotating) for at most clusterPopPollSliceMs and sweep again, until something
// comes, waitMs is spent or the caller goes. Groups in fault backoff are swept last; a
// failed group is skipped unless every group failed.
import { signalOf, type SignalSource } from "../protocol/types.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { ClusterContext } from "./context.ts";
import type { GroupLink } from "./route_source.ts";
import { isGroupFailure } from "./fault.ts";

export type GroupPoll<T> = (
  link: GroupLink,
  max: number | undefined,
  waitMs: number,
) => Promise<T[]>;

export class PollRotation {
  readonly #next = new Map<string, number>();

  /** `links` rotated by one more for each call with the same key. */
  order(key: string, links: readonly GroupLink[]): GroupLink[] {
    const start = (this.#next.get(key) ?? 0) % Math.max(1, links.length);
    this.#next.set(key, start + 1);
    return links.map((_, i) => links[(start + i) % links.length]);
  }
}

export async function sweepThenPoll<T>(
  ctx: ClusterContext,
  order: readonly GroupLink[],
  options: { max?: number; waitMs?: number },
  signal: SignalSource | undefined,
  poll: GroupPoll<T>,
): Promise<T[]> {
  if (order.length === 0) {
    throw new BrokerError("BROKER_UNAVAILABLE", "No broker group is live in this cluster");
  }
  const deadline = ctx.nowMs() + Math.max(0, options.waitMs ?? 0);
  for (let round = 0;; round++) {
    const got = await sweep(ctx, order, options.max, poll);
    const left = deadline - ctx.nowMs();
    if (got.length > 0 || left <= 0 || signalOf(signal)?.aborted) return got;
    const held = await poll(
      order[round % order.length],
      options.max,
      Math.min(left, ctx.settings.clusterPopPollSliceMs),
    ).catch((err) => skipped(err, [] as T[]));
    if (held.length > 0 || signalOf(signal)?.aborted) return held;
  }
}

/** Each group once with waitMs 0 until `max` are in hand (with no max: the first group
 * that has any answers, each group applying its own default). */
async function sweep<T>(
  ctx: ClusterContext,
  order: readonly GroupLink[],
  max: number | undefined,
  poll: GroupPoll<T>,
): Promise<T[]> {
  const available = order.filter((l) => ctx.faults.available(l.name));
  const ranked = [...available, ...order.filter((l) => !available.includes(l))];
  const out: T[] = [];
  let failure: unknown;
  let answered = false;
  for (const link of ranked) {
    try {
      out.push(...await poll(link, max === undefined ? undefined : max - out.length, 0));
      answered = true;
    } catch (err) {
      failure ??= skipped(err, err);
    }
    if (max === undefined ? out.length > 0 : out.length >= max) break;
  }
  if (!answered && failure !== undefined) throw failure;
  return out;
}

/** A failed group is skipped (the value given); the caller's mistakes are thrown. */
function skipped<T>(err: unknown, value: T): T {
  if (isGroupFailure(err)) return value;
  throw err;
}
