// Webhook subscriptions as the API shows them: create (with the group and its start
// offsets), pause, replay, delete, and the delivery log; WebhookService delivers.
import type { MessageStore } from "../../storage/message_store.ts";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkGroup, checkUserTopic } from "../protocol/names.ts";
import type {
  DeliveryAttempt,
  SubscriptionInput,
  SubscriptionView,
  TopicConfig,
} from "../protocol/types.ts";
import { MESSAGE_ID_PATTERN } from "../message_id.ts";
import type { StoredSubscription, WebhookService } from "../webhook/delivery_service.ts";
import {
  normalizeSubscription,
  type SubscriptionLimits,
  type SubscriptionRepo,
} from "../webhook/subscriptions.ts";
import type { WebhookEgress } from "../webhook/egress.ts";
import { parseTagExpression } from "../wire.ts";
import { type GroupRegistry, toGroupView } from "./group_registry.ts";
import type { TopicRegistry } from "./topic_registry.ts";

export interface SubscriptionSettings extends SubscriptionLimits {
  webhookSubscriptionsMax: number;
  webhookLogEntriesMax: number;
  /** Delivery-log entries a query answers when it names no limit. */
  webhookLogQueryDefault: number;
  /** Retries a subscription gets when it names none (RocketMQ's maxReconsumeTimes). */
  retryMaxTimesDefault: number;
  autoCreateTopicEnable: boolean;
}

export interface SubscriptionsAdminDeps {
  webhooks: WebhookService;
  repo: SubscriptionRepo;
  egress: WebhookEgress;
  store: MessageStore;
  offsets: ConsumerOffsetStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  writableTopic: (name: string) => TopicConfig | Promise<TopicConfig>;
  settings: SubscriptionSettings;
  nowMs: () => number;
}

export class SubscriptionsAdmin {
  constructor(private readonly d: SubscriptionsAdminDeps) {}

  /** Creates or replaces the webhook subscription of a group (creating the group too). */
  async upsertSubscription(group: string, input: SubscriptionInput): Promise<SubscriptionView> {
    checkGroup(group);
    const { webhooks, settings, offsets, store } = this.d;
    const previous = webhooks.get(group);
    if (!previous && webhooks.size >= settings.webhookSubscriptionsMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot add another subscription: webhookSubscriptionsMax ${settings.webhookSubscriptionsMax} reached`,
      );
    }
    const sub = normalizeSubscription(
      group,
      input,
      previous,
      settings,
      (url) => this.d.egress.checkUrl(url),
      this.d.nowMs(),
    );
    checkUserTopic(sub.topic);
    parseTagExpression(sub.tags);
    const topic = this.d.topics.find(sub.topic) ??
      (settings.autoCreateTopicEnable ? await this.d.writableTopic(sub.topic) : undefined);
    if (!topic) {
      throw new BrokerError("TOPIC_NOT_FOUND", `No topic ${sub.topic}; create it first`);
    }
    const current = this.d.groups.find(group);
    const { group: _g, ...groupSettings } = current
      ? toGroupView(current)
      : { group, consumeFromWhere: "LAST_OFFSET" as const };
    await this.d.groups.upsert(group, {
      ...groupSettings,
      retryMaxTimes: input.retryMaxTimes ?? settings.retryMaxTimesDefault,
      retryBackoffMs: input.retryBackoffMs ?? null,
      orderly: sub.ordered,
    });
    if (!previous || previous.topic !== sub.topic) {
      const start = input.startFrom ?? "latest";
      for (let q = 0; q < topic.readQueueNums; q++) {
        if (offsets.query(group, sub.topic, q) !== undefined) continue;
        offsets.commit(
          group,
          sub.topic,
          q,
          start === "latest"
            ? store.getMaxOffsetInQueue(sub.topic, q)
            : start === "earliest"
            ? store.getMinOffsetInQueue(sub.topic, q)
            : store.getOffsetInQueueByTime(sub.topic, q, start),
        );
      }
    }
    await offsets.persist(); // the start position survives a crash from now on
    await this.d.repo.save(sub);
    await webhooks.put(sub);
    return webhooks.view(sub, true);
  }

  listSubscriptions(options?: { revealSecrets?: boolean }): Promise<SubscriptionView[]> {
    const { webhooks } = this.d;
    const reveal = options?.revealSecrets === true;
    return Promise.resolve(webhooks.list().map((s) => webhooks.view(s, reveal)));
  }

  getSubscription(group: string): Promise<SubscriptionView> {
    return Promise.resolve(this.d.webhooks.view(this.#subscription(group)));
  }

  async deleteSubscription(group: string): Promise<void> {
    this.#subscription(group);
    await this.d.webhooks.remove(group);
    await this.d.repo.delete(group);
  }

  /** Pause stops deliveries (those in flight finish); resume also re-enables after a 410. */
  async setSubscriptionPaused(group: string, paused: boolean): Promise<SubscriptionView> {
    const sub = this.#subscription(group);
    const next = {
      ...sub,
      status: paused ? "paused" : "active",
      statusReason: paused ? "paused by request" : null,
      updatedAt: this.d.nowMs(),
    } as const;
    await this.d.repo.save(next);
    await this.d.webhooks.put(next);
    return this.d.webhooks.view(next);
  }

  /** Delivers again everything stored since `timestamp` (offsets reset to that time). */
  async replaySubscription(group: string, timestamp: number): Promise<SubscriptionView> {
    const sub = this.#subscription(group);
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
      throw new BrokerError("INVALID_PARAMETER", "timestamp must be a time in ms since the epoch");
    }
    const { store, offsets } = this.d;
    const topic = this.d.topics.readable(sub.topic, 0);
    await this.d.webhooks.restart(group, () => {
      for (let q = 0; q < topic.readQueueNums; q++) {
        offsets.commit(group, sub.topic, q, store.getOffsetInQueueByTime(sub.topic, q, timestamp));
      }
    });
    await offsets.persist();
    return this.d.webhooks.view(this.#subscription(group));
  }

  listDeliveries(
    group: string,
    query: { messageId?: string; limit?: number } = {},
  ): Promise<DeliveryAttempt[]> {
    this.#subscription(group);
    if (query.messageId !== undefined && !MESSAGE_ID_PATTERN.test(query.messageId)) {
      throw new BrokerError("INVALID_PARAMETER", "messageId must be a message id");
    }
    const limit = query.limit ?? this.d.settings.webhookLogQueryDefault;
    const max = this.d.settings.webhookLogEntriesMax;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > max) {
      throw new BrokerError("INVALID_PARAMETER", `limit must be 1-${max} (webhookLogEntriesMax)`);
    }
    return Promise.resolve(this.d.webhooks.log.list(group, { ...query, limit }));
  }

  #subscription(group: string): StoredSubscription {
    checkGroup(group);
    const sub = this.d.webhooks.get(group);
    if (!sub) {
      throw new BrokerError(
        "SUBSCRIPTION_NOT_FOUND",
        `No webhook subscription for group ${group}; create it with PUT /v1/subscriptions/${group}`,
      );
    }
    return sub;
  }
}
