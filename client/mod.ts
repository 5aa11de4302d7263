// @edgemq/client: a typed `fetch` client for edgemq's HTTP API, for edge apps on
// Cloudflare Workers, Vercel's edge runtime, Deno, Bun, Node (>= 20) and browsers.
// Web-standard APIs only (fetch, Web Crypto, TextEncoder); no imports beyond this folder.
// It implements the broker's core API (BrokerClient, runtime/protocol/core_api.ts) by
// shape, so the functions use it in split mode too. docs/sdk.md has the guide.
import { type CallOptions, signalOf, Transport, type TransportOptions } from "./http.ts";
import { jsonBody, utf8 } from "./body.ts";
import { batchBody } from "./batch_frame.ts";
import {
  type MessageHandler,
  subscribe,
  type SubscribeOptions,
  type Subscription,
} from "./consumer.ts";
import type {
  AckResult,
  AssignmentOptions,
  AssignmentView,
  BatchItemResult,
  CronScheduleInput,
  CronScheduleView,
  DeliveryAttempt,
  FindQuery,
  GroupOffsets,
  GroupSettings,
  GroupView,
  HealthInfo,
  HeartbeatRequest,
  MembersView,
  PopMessage,
  ProduceMessage,
  ProduceResult,
  PullRequest,
  PullResult,
  QueueOffsetInfo,
  ReceiveOptions,
  ScheduledOutcome,
  SignalSource,
  SubscriptionInput,
  SubscriptionView,
  TopicConfig,
  TopicRouteView,
  TopicUpsert,
  WireMessage,
} from "./types.ts";

export type * from "./types.ts";
export { BrokerError, PROBLEM_CODES, type ProblemCode, type ProblemJson } from "./errors.ts";
export {
  type CallOptions,
  RETRIES_DEFAULT,
  RETRY_BASE_MS_DEFAULT,
  RETRY_MAX_MS_DEFAULT,
  TIMEOUT_MS_DEFAULT,
} from "./http.ts";
export { messageBody, messageText } from "./body.ts";
export {
  type MessageHandler,
  type ReceiveClient,
  subscribe,
  SUBSCRIBE_CONCURRENCY_DEFAULT,
  SUBSCRIBE_WAIT_MS_DEFAULT,
  type SubscribeOptions,
  type Subscription,
} from "./consumer.ts";

/** binaryBatches: produceBatch sends the binary frame (batch_frame.ts), not base64 JSON. */
export type ClientOptions = TransportOptions & { binaryBatches?: boolean };

/** What produce accepts: text or bytes, and the optional message attributes. */
export type Produce = Omit<ProduceMessage, "body"> & { body: string | Uint8Array };

/** The broker's HTTP API. One instance per broker (or functions) address; it keeps no
 * connection state of its own, so it is cheap to make per request on the edge. */
export class MqClient {
  readonly #http: Transport;
  readonly #binaryBatches: boolean;

  constructor(options: ClientOptions) {
    this.#http = new Transport(options);
    this.#binaryBatches = options.binaryBatches ?? false;
  }

  /** Sends one message. With an idempotencyKey a repeat (e.g. after a timeout) stores
   * nothing and answers the first result (`idempotentReplay`). */
  produce(topic: string, message: Produce, options: CallOptions = {}): Promise<ProduceResult> {
    const headers: Record<string, string> = {};
    if (message.tag !== undefined) headers["mq-tag"] = message.tag;
    if (message.keys?.length) headers["mq-keys"] = message.keys.join(" ");
    if (message.shardingKey !== undefined) headers["mq-sharding-key"] = message.shardingKey;
    if (message.queueId !== undefined) headers["mq-queue-id"] = String(message.queueId);
    if (message.delayLevel !== undefined) headers["mq-delay-level"] = String(message.delayLevel);
    if (message.delayMs !== undefined) headers["mq-delay-ms"] = String(message.delayMs);
    if (message.deliverAt !== undefined) headers["mq-deliver-at"] = String(message.deliverAt);
    if (message.idempotencyKey !== undefined) headers["idempotency-key"] = message.idempotencyKey;
    if (message.messageId !== undefined) headers["mq-message-id"] = message.messageId;
    headers["content-type"] = message.contentType ?? "application/octet-stream";
    if (message.properties) {
      for (const [k, v] of Object.entries(message.properties)) headers[`mq-prop-${k}`] = v;
    }
    const body = typeof message.body === "string" ? utf8(message.body) : message.body;
    return this.#http.request("POST", `/v1/topics/${enc_(topic)}/messages`, {
      headers,
      body,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      repeatable: message.idempotencyKey !== undefined,
    });
  }

  /** Sends up to batchItemsMax messages in one request; each item succeeds or fails alone. */
  async produceBatch(
    topic: string,
    messages: Produce[],
    options: CallOptions = {},
  ): Promise<BatchItemResult[]> {
    const path = `/v1/topics/${enc_(topic)}/messages/batch`;
    return (await this.#http.request<{ results: BatchItemResult[] }>("POST", path, {
      ...batchBody(messages, this.#binaryBatches),
      okStatuses: [200, 400],
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      repeatable: messages.every((m) => m.idempotencyKey !== undefined),
    })).results;
  }

  /** Runs `handler` for each message of `topic` received by `group` (POP): acked when it
   * returns, nacked with a backoff when it throws. See SubscribeOptions. */
  subscribe(
    topic: string,
    group: string,
    handler: MessageHandler,
    options?: SubscribeOptions,
  ): Subscription {
    return subscribe(this, topic, group, handler, options);
  }

  pull(
    topic: string,
    queueId: number,
    request: PullRequest,
    signal?: SignalSource,
  ): Promise<PullResult> {
    const q = new URLSearchParams({ offset: String(request.offset) });
    if (request.max !== undefined) q.set("max", String(request.max));
    if (request.waitMs !== undefined) q.set("waitMs", String(request.waitMs));
    if (request.tags !== undefined) q.set("tags", request.tags);
    if (request.group !== undefined) q.set("group", request.group);
    return this.#http.request("GET", `/v1/topics/${enc_(topic)}/queues/${queueId}/messages?${q}`, {
      signal: signalOf(signal),
      holdMs: request.waitMs,
    });
  }

  upsertTopic(name: string, update: TopicUpsert): Promise<TopicConfig> {
    return this.#http.request("PUT", `/v1/topics/${enc_(name)}`, { json: update });
  }
  getTopic(name: string): Promise<TopicConfig> {
    return this.#http.request("GET", `/v1/topics/${enc_(name)}`);
  }
  async listTopics(): Promise<TopicConfig[]> {
    return (await this.#http.request<{ topics: TopicConfig[] }>("GET", "/v1/topics")).topics;
  }
  async deleteTopic(name: string): Promise<void> {
    await this.#http.request("DELETE", `/v1/topics/${enc_(name)}`);
  }
  /** The topic's broker groups and queues (global ids: slot × 1024 + the group's own). */
  topicRoute(topic: string): Promise<TopicRouteView> {
    return this.#http.request("GET", `/v1/topics/${enc_(topic)}/route`);
  }
  addTopicGroup(topic: string, brokerGroup: string): Promise<TopicRouteView> {
    return this.#http.request("POST", `/v1/topics/${enc_(topic)}/route/groups`, {
      json: { brokerGroup },
    });
  }
  drainTopicGroup(topic: string, brokerGroup: string): Promise<TopicRouteView> {
    const path = `/v1/topics/${enc_(topic)}/route/groups/${enc_(brokerGroup)}/drain`;
    return this.#http.request("POST", path);
  }
  removeTopicGroup(t: string, g: string, o: { force?: boolean } = {}): Promise<TopicRouteView> {
    const q = o.force ? "?force=true" : "";
    return this.#http.request("DELETE", `/v1/topics/${enc_(t)}/route/groups/${enc_(g)}${q}`);
  }
  upsertGroup(group: string, settings: GroupSettings = {}): Promise<GroupView> {
    return this.#http.request("PUT", `/v1/groups/${enc_(group)}`, { json: settings });
  }
  getGroup(group: string): Promise<GroupView> {
    return this.#http.request("GET", `/v1/groups/${enc_(group)}`);
  }
  heartbeat(group: string, data: HeartbeatRequest): Promise<MembersView> {
    return this.#http.request("POST", `/v1/groups/${enc_(group)}/heartbeat`, { json: data });
  }
  unregister(group: string, clientId: string): Promise<MembersView> {
    return this.#http.request("DELETE", `/v1/groups/${enc_(group)}/members/${enc_(clientId)}`);
  }
  assignment(
    group: string,
    clientId: string,
    topic: string,
    options: AssignmentOptions = {},
  ): Promise<AssignmentView> {
    const ids = (options.queueIds === undefined ? "" : `&queueIds=${options.queueIds.join(",")}`) +
      (options.slotBrokers ? `&slotBrokers=${enc_(options.slotBrokers.join(","))}` : "");
    return this.#http.request(
      "GET",
      `/v1/groups/${enc_(group)}/assignment?clientId=${enc_(clientId)}&topic=${enc_(topic)}${ids}`,
    );
  }
  async lockQueues(
    group: string,
    clientId: string,
    topic: string,
    queueIds: number[],
    unlock = false,
  ): Promise<number[]> {
    const r = await this.#http.request<{ queueIds: number[] }>(
      "POST",
      `/v1/groups/${enc_(group)}/${unlock ? "unlock" : "lock"}`,
      { json: { clientId, topic, queueIds } },
    );
    return r.queueIds;
  }
  listDlq(group: string, options: { offset?: number; max?: number } = {}): Promise<PullResult> {
    const q = new URLSearchParams();
    if (options.offset !== undefined) q.set("offset", String(options.offset));
    if (options.max !== undefined) q.set("max", String(options.max));
    return this.#http.request("GET", `/v1/groups/${enc_(group)}/dlq?${q}`);
  }
  redriveDlq(group: string, messageIds?: string[]): Promise<{ redriven: number }> {
    return this.#http.request("POST", `/v1/groups/${enc_(group)}/dlq/redrive`, {
      json: messageIds ? { messageIds } : {},
    });
  }
  purgeDlq(group: string): Promise<{ purged: number }> {
    return this.#http.request("DELETE", `/v1/groups/${enc_(group)}/dlq`);
  }
  commitOffset(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<QueueOffsetInfo> {
    return this.#http.request(
      "PUT",
      `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}/${queueId}`,
      {
        json: { offset },
      },
    );
  }
  getOffsets(group: string, topic: string): Promise<GroupOffsets> {
    return this.#http.request("GET", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}`);
  }
  getOffset(group: string, topic: string, queueId: number): Promise<QueueOffsetInfo> {
    return this.#http.request("GET", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}/${queueId}`);
  }
  resetOffsetsByTime(group: string, topic: string, timestamp: number): Promise<GroupOffsets> {
    return this.#http.request("PUT", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}`, {
      json: { timestamp },
    });
  }
  getMessageById(messageId: string, topic?: string): Promise<WireMessage> {
    const q = topic ? `?topic=${enc_(topic)}` : "";
    return this.#http.request("GET", `/v1/messages/${enc_(messageId)}${q}`);
  }
  async findMessages(topic: string, query: FindQuery): Promise<WireMessage[]> {
    const q = new URLSearchParams();
    if (query.key !== undefined) q.set("key", query.key);
    if (query.beginTimestamp !== undefined) q.set("begin", String(query.beginTimestamp));
    if (query.endTimestamp !== undefined) q.set("end", String(query.endTimestamp));
    if (query.maxNum !== undefined) q.set("max", String(query.maxNum));
    return (await this.#http.request<{ messages: WireMessage[] }>(
      "GET",
      `/v1/topics/${enc_(topic)}/messages?${q}`,
    )).messages;
  }
  health(): Promise<HealthInfo> {
    return this.#http.request("GET", "/healthz");
  }
  async receive(
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]> {
    return (await this.#http.request<{ messages: PopMessage[] }>(
      "POST",
      `/v1/groups/${enc_(group)}/receive`,
      { json: options, signal: signalOf(signal), holdMs: options.waitMs },
    )).messages;
  }
  async ack(group: string, receiptHandle: string): Promise<void> {
    await this.#http.request("POST", `/v1/groups/${enc_(group)}/ack`, { json: { receiptHandle } });
  }
  async ackBatch(group: string, receiptHandles: string[]): Promise<AckResult[]> {
    return (await this.#http.request<{ results: AckResult[] }>(
      "POST",
      `/v1/groups/${enc_(group)}/ack/batch`,
      { json: { receiptHandles } },
    )).results;
  }
  async nack(group: string, receiptHandle: string, delayMs?: number): Promise<void> {
    await this.#http.request("POST", `/v1/groups/${enc_(group)}/nack`, {
      json: { receiptHandle, delayMs },
    });
  }
  changeInvisibleTime(
    group: string,
    receiptHandle: string,
    invisibleMs: number,
  ): Promise<{ invisibleUntil: number }> {
    return this.#http.request("POST", `/v1/groups/${enc_(group)}/visibility`, {
      json: { receiptHandle, invisibleMs },
    });
  }
  cancelScheduled(topic: string, messageId: string): Promise<ScheduledOutcome> {
    return this.#http.request("DELETE", `/v1/topics/${enc_(topic)}/scheduled/${enc_(messageId)}`);
  }
  async cancelScheduledByKey(topic: string, key: string): Promise<ScheduledOutcome[]> {
    return (await this.#http.request<{ cancelled: ScheduledOutcome[] }>(
      "DELETE",
      `/v1/topics/${enc_(topic)}/scheduled?key=${enc_(key)}`,
    )).cancelled;
  }
  rescheduleScheduled(
    topic: string,
    messageId: string,
    deliverAt: number,
  ): Promise<ScheduledOutcome> {
    return this.#http.request("PUT", `/v1/topics/${enc_(topic)}/scheduled/${enc_(messageId)}`, {
      json: { deliverAt },
    });
  }
  createSchedule(
    input: Omit<CronScheduleInput, "message"> & { message: Produce },
  ): Promise<CronScheduleView> {
    return this.#http.request("POST", "/v1/schedules", {
      json: { ...input, message: jsonBody(input.message) },
    });
  }
  async listSchedules(): Promise<CronScheduleView[]> {
    return (await this.#http.request<{ schedules: CronScheduleView[] }>("GET", "/v1/schedules"))
      .schedules;
  }
  getSchedule(id: string): Promise<CronScheduleView> {
    return this.#http.request("GET", `/v1/schedules/${enc_(id)}`);
  }
  setSchedulePaused(id: string, paused: boolean): Promise<CronScheduleView> {
    return this.#http.request("POST", `/v1/schedules/${enc_(id)}/${paused ? "pause" : "resume"}`);
  }
  async deleteSchedule(id: string): Promise<void> {
    await this.#http.request("DELETE", `/v1/schedules/${enc_(id)}`);
  }

  /** Creates or replaces a group's webhook subscription; the answer shows its secrets. */
  upsertSubscription(group: string, input: SubscriptionInput): Promise<SubscriptionView> {
    return this.#http.request("PUT", `/v1/subscriptions/${enc_(group)}`, { json: input });
  }
  /** With revealSecrets (an admin key), the secrets in full. */
  async listSubscriptions(options: { revealSecrets?: boolean } = {}): Promise<SubscriptionView[]> {
    return (await this.#http.request<{ subscriptions: SubscriptionView[] }>(
      "GET",
      `/v1/subscriptions${options.revealSecrets ? "?revealSecrets=true" : ""}`,
    )).subscriptions;
  }
  getSubscription(group: string): Promise<SubscriptionView> {
    return this.#http.request("GET", `/v1/subscriptions/${enc_(group)}`);
  }
  async deleteSubscription(group: string): Promise<void> {
    await this.#http.request("DELETE", `/v1/subscriptions/${enc_(group)}`);
  }
  setSubscriptionPaused(group: string, paused: boolean): Promise<SubscriptionView> {
    return this.#http.request(
      "POST",
      `/v1/subscriptions/${enc_(group)}/${paused ? "pause" : "resume"}`,
    );
  }
  replaySubscription(group: string, timestamp: number): Promise<SubscriptionView> {
    return this.#http.request("POST", `/v1/subscriptions/${enc_(group)}/replay`, {
      json: { timestamp },
    });
  }
  async listDeliveries(
    group: string,
    query: { messageId?: string; limit?: number } = {},
  ): Promise<DeliveryAttempt[]> {
    const params = new URLSearchParams();
    if (query.messageId !== undefined) params.set("messageId", query.messageId);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    const qs = params.size > 0 ? `?${params}` : "";
    return (await this.#http.request<{ deliveries: DeliveryAttempt[] }>(
      "GET",
      `/v1/subscriptions/${enc_(group)}/deliveries${qs}`,
    )).deliveries;
  }
}

function enc_(segment: string): string {
  return encodeURIComponent(segment);
}
