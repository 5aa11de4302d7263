// Webhook subscriptions across broker groups (issue #26): each group delivers the messages
// of its own queues, so a subscription is written to every group of its topic (with one
// signing secret made here when none is given, so every delivery verifies with the same
// key), changed and deleted on every live group that has it, and shown merged: settings
// from the first group by name, statistics added up.
import type { DeliveryAttempt, SubscriptionInput, SubscriptionView } from "../protocol/types.ts";
import type { ClusterContext } from "./context.ts";
import { type Answer, broadcast, fanOut } from "./fanout.ts";
import type { GroupLink } from "./route_source.ts";
import { newSigningSecret } from "./secrets.ts";
import { globalIdOf } from "./global_ids.ts";
import { byName } from "./queue_map.ts";

const ABSENT = ["SUBSCRIPTION_NOT_FOUND"] as const;

export class SubscriptionRouter {
  constructor(private readonly ctx: ClusterContext) {}

  async upsertSubscription(group: string, input: SubscriptionInput): Promise<SubscriptionView> {
    const links = (await this.ctx.queues(input.topic)).all().map((g) => g.link);
    const secrets = input.secrets ?? [newSigningSecret()];
    const answers = await broadcast(
      this.ctx,
      `webhook subscription ${group}`,
      byName(links),
      input.topic,
      (c) => c.upsertSubscription(group, { ...input, secrets }),
    );
    return merged(answers);
  }

  async listSubscriptions(options?: { revealSecrets?: boolean }): Promise<SubscriptionView[]> {
    const answers = await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      (c) => c.listSubscriptions(options),
    );
    const byGroup = new Map<string, Answer<SubscriptionView>[]>();
    for (const { link, value } of answers) {
      for (const view of value) {
        byGroup.set(view.group, [...byGroup.get(view.group) ?? [], { link, value: view }]);
      }
    }
    return [...byGroup.keys()].sort().map((g) => merged(byGroup.get(g)!));
  }

  getSubscription(group: string): Promise<SubscriptionView> {
    return this.#everywhere((c) => c.getSubscription(group));
  }

  setSubscriptionPaused(group: string, paused: boolean): Promise<SubscriptionView> {
    return this.#everywhere((c) => c.setSubscriptionPaused(group, paused));
  }

  replaySubscription(group: string, timestamp: number): Promise<SubscriptionView> {
    return this.#everywhere((c) => c.replaySubscription(group, timestamp));
  }

  async deleteSubscription(group: string): Promise<void> {
    await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      (c) => c.deleteSubscription(group),
      ABSENT,
    );
  }

  /** Every group's log, newest first (as one broker's is), cut to `limit`. */
  async listDeliveries(
    group: string,
    query?: { messageId?: string; limit?: number },
  ): Promise<DeliveryAttempt[]> {
    const answers = await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      async (c, link) => (await c.listDeliveries(group, query)).map((a) => ({ ...a, link })),
      ABSENT,
    );
    const all = answers.flatMap((a) => a.value).sort((a, b) => b.at - a.at);
    const out = query?.limit === undefined ? all : all.slice(0, query.limit);
    return Promise.all(out.map(async ({ link, ...a }) => ({
      ...a,
      queueId: await this.#toGlobal(link, a.topic, a.queueId),
    })));
  }

  async #everywhere(
    f: (client: GroupLink["client"]) => Promise<SubscriptionView>,
  ): Promise<SubscriptionView> {
    return merged(await fanOut(this.ctx, await this.ctx.groups(), undefined, f, ABSENT));
  }

  #toGlobal(link: GroupLink, topic: string, queueId: number): Promise<number> {
    return globalIdOf(this.ctx, topic, link.name, queueId);
  }
}

/** The first group's view (by name) with every group's statistics added up. */
function merged(answers: Answer<SubscriptionView>[]): SubscriptionView {
  const sorted = [...answers].sort((a, b) => a.link.name < b.link.name ? -1 : 1);
  const first = sorted[0].value;
  const stats = { ...first.stats };
  for (const { value } of sorted.slice(1)) {
    for (const k of Object.keys(stats) as (keyof typeof stats)[]) stats[k] += value.stats[k];
  }
  return { ...first, stats };
}
