// Transactional messages across broker groups (issue #26): a half message goes to a group
// picked as produce picks one (produce_router.ts); its transaction id comes back wrapped
// with the group (handles.ts), so commit, rollback and lookups go where it lives. Check
// settings are broadcast (every group may hold half messages of the producer group), with
// one secret made here; check polls sweep the groups like POP (poll_loop.ts).
import type { ProduceMessage, SignalSource } from "../protocol/types.ts";
import type {
  TransactionBegun,
  TransactionCheck,
  TransactionCheckInput,
  TransactionCheckView,
  TransactionDecision,
  TransactionPollOptions,
  TransactionView,
} from "../protocol/transaction_types.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { ClusterContext } from "./context.ts";
import type { ProduceRouter } from "./produce_router.ts";
import type { GroupLink } from "./route_source.ts";
import { unwrapTransactionId, wrapToken } from "./handles.ts";
import { broadcast, fanOut, firstLive } from "./fanout.ts";
import { PollRotation, sweepThenPoll } from "./poll_loop.ts";
import { newSigningSecret } from "./secrets.ts";
import { globalIdOf } from "./global_ids.ts";

export class TransactionRouter {
  readonly #rotation: PollRotation;

  constructor(private readonly ctx: ClusterContext, private readonly produce: ProduceRouter) {
    this.#rotation = new PollRotation(ctx.settings.clusterRotationKeysMax);
  }

  beginTransaction(
    topic: string,
    message: ProduceMessage,
    producerGroup: string,
  ): Promise<TransactionBegun> {
    return this.produce.send(topic, message, async (c, local, link) => {
      const r = await c.beginTransaction(topic, local, producerGroup);
      return { ...r, transactionId: wrapToken(link.name, r.transactionId) };
    });
  }

  async endTransaction(
    transactionId: string,
    decision: TransactionDecision,
    options?: { fromCheck?: boolean },
  ): Promise<TransactionView> {
    const { link, token } = await this.#route(transactionId);
    const view = await this.ctx.call(
      link,
      undefined,
      (c) => c.endTransaction(token, decision, options),
    );
    return this.#globalized(link, view);
  }

  async getTransaction(transactionId: string): Promise<TransactionView> {
    const { link, token } = await this.#route(transactionId);
    return this.#globalized(
      link,
      await this.ctx.call(link, undefined, (c) => c.getTransaction(token)),
    );
  }

  async setTransactionCheck(
    group: string,
    input: TransactionCheckInput,
  ): Promise<TransactionCheckView> {
    const secrets = input.secrets ?? [newSigningSecret()];
    const links = await this.ctx.groups();
    const answers = await broadcast(
      this.ctx,
      `transaction check of ${group}`,
      links,
      undefined,
      (c) => c.setTransactionCheck(group, { ...input, secrets }),
    );
    return answers[0].value;
  }

  async getTransactionCheck(group: string): Promise<TransactionCheckView> {
    const link = firstLive(await this.ctx.groups());
    return this.ctx.call(link, undefined, (c) => c.getTransactionCheck(group));
  }

  async deleteTransactionCheck(group: string): Promise<void> {
    const links = await this.ctx.groups();
    await fanOut(this.ctx, links, undefined, (c) => c.deleteTransactionCheck(group), [
      "GROUP_NOT_FOUND",
    ]);
  }

  /** Every live group's, one per producer group (the first group by name that has it). */
  async listTransactionChecks(
    options?: { revealSecrets?: boolean },
  ): Promise<TransactionCheckView[]> {
    const links = await this.ctx.groups();
    const answers = await fanOut(
      this.ctx,
      links,
      undefined,
      (c) => c.listTransactionChecks(options),
    );
    const byGroup = new Map<string, TransactionCheckView>();
    for (const { value } of answers) {
      for (const v of value) if (!byGroup.has(v.producerGroup)) byGroup.set(v.producerGroup, v);
    }
    return [...byGroup.keys()].sort().map((g) => byGroup.get(g)!);
  }

  async pollTransactionChecks(
    group: string,
    options: TransactionPollOptions,
    signal?: SignalSource,
  ): Promise<TransactionCheck[]> {
    const order = this.#rotation.order(group, await this.ctx.groups());
    const checks = await sweepThenPoll(
      this.ctx,
      order.links,
      options,
      signal,
      async (link, max, waitMs) => {
        const got = await this.ctx.call(
          link,
          undefined,
          (c) => c.pollTransactionChecks(group, { max, waitMs }, signal),
          signal,
        );
        return Promise.all(got.map(async (check) => ({
          ...check,
          transactionId: wrapToken(link.name, check.transactionId),
          queueId: await this.#toGlobal(link, check.topic, check.queueId),
        })));
      },
    );
    order.advance();
    return checks;
  }

  async #route(transactionId: string): Promise<{ link: GroupLink; token: string }> {
    const parts = unwrapTransactionId(transactionId);
    const link = await this.ctx.liveGroup(parts.group);
    if (link === undefined) {
      throw new BrokerError(
        "TRANSACTION_NOT_FOUND",
        `No transaction ${transactionId}: broker group ${parts.group} is not live`,
      );
    }
    return { link, token: parts.token };
  }

  async #globalized(link: GroupLink, view: TransactionView): Promise<TransactionView> {
    return {
      ...view,
      transactionId: wrapToken(link.name, view.transactionId),
      queueId: await this.#toGlobal(link, view.topic, view.queueId),
    };
  }

  /** A group's queue id of `topic` as clients see it (global_ids.ts: -1 for a group
   * outside the topic's route, e.g. a half message left on a removed group). */
  #toGlobal(link: GroupLink, topic: string, queueId: number): Promise<number> {
    return globalIdOf(this.ctx, topic, link.name, queueId);
  }
}
