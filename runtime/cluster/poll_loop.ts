// A long poll over several broker groups (POP receive, transaction checks), as RocketMQ 5's
// proxy serves one: sweep the groups without waiting, starting at a group that rotates per
// call (so none starves while the first ones always have something), then hold one group
// (rotating) for at most clusterPopPollSliceMs and sweep again, until something comes,
// waitMs is spent or the caller goes. Groups in fault backoff are left out of sweeps and
// holds while any other group is available. Messages already taken are never thrown
// away: a later group's error ends the sweep with what is in hand; an error is the answer
// only when nothing was taken and every group asked failed.
import { signalOf, type SignalSource } from "../protocol/types.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { ClusterContext } from "./context.ts";
import type { GroupLink } from "./route_source.ts";
import { isGroupFailure, isRetryElsewhere } from "./fault.ts";

export type GroupPoll<T> = (
  link: GroupLink,
  max: number | undefined,
  waitMs: number,
) => Promise<T[]>;

/** Where the next call of each key starts, for at most `maxKeys` keys (least recently used
 * forgotten: keys come from callers, group × topic). */
export class PollRotation {
  readonly #next = new Map<string, number>();

  constructor(private readonly maxKeys: number) {}

  /** `links` rotated by the key's start; `advance()` moves the start on once the call
   * succeeded (a refused call, e.g. an unknown consumer group, leaves no entry). */
  order(key: string, links: readonly GroupLink[]): { links: GroupLink[]; advance: () => void } {
    const at = this.#next.get(key) ?? 0;
    const start = at % Math.max(1, links.length);
    return {
      links: links.map((_, i) => links[(start + i) % links.length]),
      advance: () => {
        this.#next.delete(key);
        this.#next.set(key, (start + 1) % Math.max(1, links.length));
        if (this.#next.size > this.maxKeys) this.#next.delete(this.#next.keys().next().value!);
      },
    };
  }

  get size(): number {
    return this.#next.size;
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
  const aborted = () => signalOf(signal)?.aborted === true;
  for (let round = 0;; round++) {
    const got = await sweep(ctx, order, options.max, poll, aborted);
    const left = deadline - ctx.nowMs();
    if (got.length > 0 || left <= 0 || aborted()) return got;
    const holdable = available(ctx, order);
    const held = await poll(
      holdable[round % holdable.length],
      options.max,
      Math.min(left, ctx.settings.clusterPopPollSliceMs),
    ).catch((err) => {
      if (aborted() || isRetryElsewhere(err)) return [] as T[];
      throw err; // the caller's mistake; nothing was taken
    });
    if (held.length > 0 || aborted()) return held;
  }
}

/** The groups not in fault backoff, in order; all of them when every one is. */
function available(ctx: ClusterContext, order: readonly GroupLink[]): readonly GroupLink[] {
  const ok = order.filter((l) => ctx.faults.available(l.name, l.epoch));
  return ok.length > 0 ? ok : order;
}

/** Each group once with waitMs 0 until `max` are in hand (with no max: the first group
 * that has any answers, each group applying its own default); groups in backoff only when
 * no other group answered. */
async function sweep<T>(
  ctx: ClusterContext,
  order: readonly GroupLink[],
  max: number | undefined,
  poll: GroupPoll<T>,
  aborted: () => boolean,
): Promise<T[]> {
  const out: T[] = [];
  let refusal: unknown;
  let failure: unknown;
  let answered = false;
  const first = available(ctx, order);
  // Groups in backoff are asked only when every available one failed.
  const ranked = [...first, ...order.filter((l) => !first.includes(l))];
  for (const [i, link] of ranked.entries()) {
    if (i >= first.length && answered) break;
    try {
      out.push(...await poll(link, max === undefined ? undefined : max - out.length, 0));
      answered = true;
    } catch (err) {
      if (isGroupFailure(err)) failure ??= err;
      else refusal ??= err;
      if (out.length > 0) break; // what was taken goes back to the caller, never lost
    }
    if (aborted() || (max === undefined ? out.length > 0 : out.length >= max)) break;
  }
  if (!answered && out.length === 0 && !aborted()) {
    const err = refusal ?? failure;
    if (err !== undefined) throw err;
  }
  return out;
}
