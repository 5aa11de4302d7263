// POP across broker groups (issue #26): a receive sweeps the topic's readable groups, then
// long-polls them in turn (poll_loop.ts, RocketMQ 5's proxy's way). Receipt handles come
// back wrapped with their group (handles.ts); ack, nack and changeInvisibleTime go where
// the handle says.
import { BrokerError } from "../protocol/errors.ts";
import type { AckResult, PopMessage, ReceiveOptions, SignalSource } from "../protocol/types.ts";
import { itemError } from "../core/errors.ts";
import type { ClusterContext } from "./context.ts";
import { forGroup } from "./group_provision.ts";
import { isGroupFailure, isRetryElsewhere } from "./fault.ts";
import { noGroupFor, type TopicQueues } from "./queue_map.ts";
import { messageIn } from "./global_ids.ts";
import type { GroupLink } from "./route_source.ts";
import { unwrapReceiptHandle, wrapToken } from "./handles.ts";
import { PollRotation, sweepThenPoll } from "./poll_loop.ts";

export class PopRouter {
  readonly #rotation: PollRotation;

  constructor(private readonly ctx: ClusterContext) {
    this.#rotation = new PollRotation(ctx.settings.clusterRotationKeysMax);
  }

  async receive(
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]> {
    const queues = await this.ctx.queues(options.topic);
    const order = this.#rotation.order(`${group}\u0000${options.topic}`, readableLinks(queues));
    const got = await sweepThenPoll(
      this.ctx,
      order.links,
      options,
      signal,
      (link, max, waitMs) =>
        this.#receiveFrom(queues, link, group, { ...options, max, waitMs }, signal),
    );
    order.advance();
    return got;
  }

  async #receiveFrom(
    queues: TopicQueues,
    link: GroupLink,
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]> {
    const got = await forGroup(
      this.ctx,
      link,
      queues.topic,
      group,
      (c) => c.receive(group, options, signal),
      signal,
    ).catch((err) => {
      // The group lost the topic or stopped serving reads: the route is stale, re-read it.
      if (isRetryElsewhere(err) && !isGroupFailure(err)) this.ctx.routes.invalidate(queues.topic);
      throw err;
    });
    return got.map((m) => ({
      ...messageIn(queues, link.name, m),
      receiptHandle: wrapToken(link.name, m.receiptHandle),
    }));
  }

  async ack(group: string, handle: string): Promise<void> {
    const { link, token } = await this.#route(group, handle);
    await this.ctx.call(link, undefined, (c) => c.ack(group, token));
  }

  async ackBatch(group: string, handles: string[]): Promise<AckResult[]> {
    const results: AckResult[] = new Array(handles.length);
    const parts = new Map<string, { link: GroupLink; items: number[] }>();
    await Promise.all(handles.map(async (h, i) => {
      try {
        const { link } = await this.#route(group, h);
        const part = parts.get(link.name) ?? { link, items: [] };
        parts.set(link.name, part);
        part.items.push(i);
      } catch (err) {
        results[i] = { receiptHandle: h, ok: false, error: itemError(err) };
      }
    }));
    await Promise.all([...parts.values()].map(async ({ link, items }) => {
      items.sort((a, b) => a - b);
      const tokens = items.map((i) => unwrapReceiptHandle(handles[i], group).token);
      try {
        const answers = await this.ctx.call(link, undefined, (c) => c.ackBatch(group, tokens));
        answers.forEach((a, j) => results[items[j]] = { ...a, receiptHandle: handles[items[j]] });
      } catch (err) {
        for (const i of items) {
          results[i] = { receiptHandle: handles[i], ok: false, error: itemError(err) };
        }
      }
    }));
    return results;
  }

  async nack(group: string, handle: string, delayMs?: number): Promise<void> {
    const { link, token } = await this.#route(group, handle);
    await this.ctx.call(link, undefined, (c) => c.nack(group, token, delayMs));
  }

  async changeInvisibleTime(group: string, handle: string, invisibleMs: number) {
    const { link, token } = await this.#route(group, handle);
    return this.ctx.call(link, undefined, (c) => c.changeInvisibleTime(group, token, invisibleMs));
  }

  async deadLetter(group: string, handle: string): Promise<void> {
    const { link, token } = await this.#route(group, handle);
    await this.ctx.call(link, undefined, (c) => {
      if (!c.deadLetter) {
        throw new BrokerError("INVALID_PARAMETER", `Broker group ${link.name} cannot dead-letter`);
      }
      return c.deadLetter(group, token);
    });
  }

  /** The live group a wrapped handle names; a handle of a group that is gone is unknown. */
  async #route(group: string, handle: string): Promise<{ link: GroupLink; token: string }> {
    const parts = unwrapReceiptHandle(handle, group);
    const link = await this.ctx.liveGroup(parts.group);
    if (link === undefined) {
      throw new BrokerError(
        "RECEIPT_HANDLE_UNKNOWN",
        `Unknown receipt handle ${
          JSON.stringify(handle.slice(0, 64))
        } for group ${group}: broker group ${parts.group} is not live`,
      );
    }
    return { link, token: parts.token };
  }
}

function readableLinks(queues: TopicQueues): GroupLink[] {
  const links = queues.readable().map((g) => g.link);
  if (links.length > 0) return links;
  throw noGroupFor(queues, `receive from ${queues.topic}`, "none of its broker groups is readable");
}
