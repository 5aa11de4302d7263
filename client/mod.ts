// A small typed `fetch` client for the public HTTP API. Works on Deno, Bun, Node and in
// browsers (no imports beyond the protocol types). It is also the BrokerClient the
// functions use in split mode, so everything the API offers is here.
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";
import { signalOf } from "../runtime/protocol/types.ts";
import type {
  AckResult,
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
  TopicUpsert,
  WireMessage,
} from "../runtime/protocol/types.ts";

export type { BatchItemResult, ProduceMessage, ProduceResult, PullResult, WireMessage };
export { BrokerError };

export interface ClientOptions {
  /** e.g. "http://127.0.0.1:8080" */
  baseUrl: string;
  /** Bearer API key. */
  token?: string;
  fetch?: typeof fetch;
}

/** What produce accepts: text or bytes, and the optional message attributes. */
export type Produce = Omit<ProduceMessage, "body"> & { body: string | Uint8Array };

const enc = new TextEncoder();

export class MqClient implements BrokerClient {
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.#base = options.baseUrl.replace(/\/$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  produce(topic: string, message: Produce): Promise<ProduceResult> {
    const headers: Record<string, string> = {};
    if (message.tag !== undefined) headers["mq-tag"] = message.tag;
    if (message.keys?.length) headers["mq-keys"] = message.keys.join(" ");
    if (message.shardingKey !== undefined) headers["mq-sharding-key"] = message.shardingKey;
    if (message.queueId !== undefined) headers["mq-queue-id"] = String(message.queueId);
    if (message.delayLevel !== undefined) headers["mq-delay-level"] = String(message.delayLevel);
    if (message.delayMs !== undefined) headers["mq-delay-ms"] = String(message.delayMs);
    if (message.deliverAt !== undefined) headers["mq-deliver-at"] = String(message.deliverAt);
    if (message.idempotencyKey !== undefined) headers["idempotency-key"] = message.idempotencyKey;
    headers["content-type"] = message.contentType ?? "application/octet-stream";
    for (const [k, v] of Object.entries(message.properties ?? {})) headers[`mq-prop-${k}`] = v;
    const body = typeof message.body === "string" ? enc.encode(message.body) : message.body;
    return this.#request("POST", `/v1/topics/${enc_(topic)}/messages`, { headers, body });
  }

  async produceBatch(topic: string, messages: Produce[]): Promise<BatchItemResult[]> {
    const items = messages.map((m) => {
      const { body, ...rest } = m;
      return typeof body === "string"
        ? { ...rest, body }
        : { ...rest, body: base64(body), bodyEncoding: "base64" };
    });
    const res = await this.#request<{ results: BatchItemResult[] }>(
      "POST",
      `/v1/topics/${enc_(topic)}/messages/batch`,
      {
        json: { messages: items },
        okStatuses: [200, 400],
      },
    );
    return res.results;
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
    return this.#request("GET", `/v1/topics/${enc_(topic)}/queues/${queueId}/messages?${q}`, {
      signal: signalOf(signal),
    });
  }

  upsertTopic(name: string, update: TopicUpsert): Promise<TopicConfig> {
    return this.#request("PUT", `/v1/topics/${enc_(name)}`, { json: update });
  }
  getTopic(name: string): Promise<TopicConfig> {
    return this.#request("GET", `/v1/topics/${enc_(name)}`);
  }
  async listTopics(): Promise<TopicConfig[]> {
    return (await this.#request<{ topics: TopicConfig[] }>("GET", "/v1/topics")).topics;
  }
  async deleteTopic(name: string): Promise<void> {
    await this.#request("DELETE", `/v1/topics/${enc_(name)}`);
  }
  upsertGroup(group: string, settings: GroupSettings = {}): Promise<GroupView> {
    return this.#request("PUT", `/v1/groups/${enc_(group)}`, { json: settings });
  }
  getGroup(group: string): Promise<GroupView> {
    return this.#request("GET", `/v1/groups/${enc_(group)}`);
  }
  heartbeat(group: string, data: HeartbeatRequest): Promise<MembersView> {
    return this.#request("POST", `/v1/groups/${enc_(group)}/heartbeat`, { json: data });
  }
  unregister(group: string, clientId: string): Promise<MembersView> {
    return this.#request("DELETE", `/v1/groups/${enc_(group)}/members/${enc_(clientId)}`);
  }
  assignment(group: string, clientId: string, topic: string): Promise<AssignmentView> {
    return this.#request(
      "GET",
      `/v1/groups/${enc_(group)}/assignment?clientId=${enc_(clientId)}&topic=${enc_(topic)}`,
    );
  }
  async lockQueues(
    group: string,
    clientId: string,
    topic: string,
    queueIds: number[],
    unlock = false,
  ): Promise<number[]> {
    const r = await this.#request<{ queueIds: number[] }>(
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
    return this.#request("GET", `/v1/groups/${enc_(group)}/dlq?${q}`);
  }
  redriveDlq(group: string, messageIds?: string[]): Promise<{ redriven: number }> {
    return this.#request("POST", `/v1/groups/${enc_(group)}/dlq/redrive`, {
      json: messageIds ? { messageIds } : {},
    });
  }
  purgeDlq(group: string): Promise<{ purged: number }> {
    return this.#request("DELETE", `/v1/groups/${enc_(group)}/dlq`);
  }
  commitOffset(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<QueueOffsetInfo> {
    return this.#request("PUT", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}/${queueId}`, {
      json: { offset },
    });
  }
  getOffsets(group: string, topic: string): Promise<GroupOffsets> {
    return this.#request("GET", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}`);
  }
  getOffset(group: string, topic: string, queueId: number): Promise<QueueOffsetInfo> {
    return this.#request("GET", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}/${queueId}`);
  }
  resetOffsetsByTime(group: string, topic: string, timestamp: number): Promise<GroupOffsets> {
    return this.#request("PUT", `/v1/groups/${enc_(group)}/offsets/${enc_(topic)}`, {
      json: { timestamp },
    });
  }
  getMessageById(messageId: string, topic?: string): Promise<WireMessage> {
    const q = topic ? `?topic=${enc_(topic)}` : "";
    return this.#request("GET", `/v1/messages/${enc_(messageId)}${q}`);
  }
  async findMessages(topic: string, query: FindQuery): Promise<WireMessage[]> {
    const q = new URLSearchParams();
    if (query.key !== undefined) q.set("key", query.key);
    if (query.beginTimestamp !== undefined) q.set("begin", String(query.beginTimestamp));
    if (query.endTimestamp !== undefined) q.set("end", String(query.endTimestamp));
    if (query.maxNum !== undefined) q.set("max", String(query.maxNum));
    return (await this.#request<{ messages: WireMessage[] }>(
      "GET",
      `/v1/topics/${enc_(topic)}/messages?${q}`,
    )).messages;
  }
  health(): Promise<HealthInfo> {
    return this.#request("GET", "/healthz");
  }
  async receive(
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]> {
    return (await this.#request<{ messages: PopMessage[] }>(
      "POST",
      `/v1/groups/${enc_(group)}/receive`,
      { json: options, signal: signalOf(signal) },
    )).messages;
  }
  async ack(group: string, receiptHandle: string): Promise<void> {
    await this.#request("POST", `/v1/groups/${enc_(group)}/ack`, { json: { receiptHandle } });
  }
  async ackBatch(group: string, receiptHandles: string[]): Promise<AckResult[]> {
    return (await this.#request<{ results: AckResult[] }>(
      "POST",
      `/v1/groups/${enc_(group)}/ack/batch`,
      { json: { receiptHandles } },
    )).results;
  }
  async nack(group: string, receiptHandle: string, delayMs?: number): Promise<void> {
    await this.#request("POST", `/v1/groups/${enc_(group)}/nack`, {
      json: { receiptHandle, delayMs },
    });
  }
  changeInvisibleTime(
    group: string,
    receiptHandle: string,
    invisibleMs: number,
  ): Promise<{ invisibleUntil: number }> {
    return this.#request("POST", `/v1/groups/${enc_(group)}/visibility`, {
      json: { receiptHandle, invisibleMs },
    });
  }
  cancelScheduled(topic: string, messageId: string): Promise<ScheduledOutcome> {
    return this.#request("DELETE", `/v1/topics/${enc_(topic)}/scheduled/${enc_(messageId)}`);
  }
  async cancelScheduledByKey(topic: string, key: string): Promise<ScheduledOutcome[]> {
    return (await this.#request<{ cancelled: ScheduledOutcome[] }>(
      "DELETE",
      `/v1/topics/${enc_(topic)}/scheduled?key=${enc_(key)}`,
    )).cancelled;
  }
  rescheduleScheduled(
    topic: string,
    messageId: string,
    deliverAt: number,
  ): Promise<ScheduledOutcome> {
    return this.#request("PUT", `/v1/topics/${enc_(topic)}/scheduled/${enc_(messageId)}`, {
      json: { deliverAt },
    });
  }
  createSchedule(
    input: Omit<CronScheduleInput, "message"> & { message: Produce },
  ): Promise<CronScheduleView> {
    const { body, ...rest } = input.message;
    const message = typeof body === "string"
      ? { ...rest, body }
      : { ...rest, body: base64(body), bodyEncoding: "base64" };
    return this.#request("POST", "/v1/schedules", { json: { ...input, message } });
  }
  async listSchedules(): Promise<CronScheduleView[]> {
    return (await this.#request<{ schedules: CronScheduleView[] }>("GET", "/v1/schedules"))
      .schedules;
  }
  getSchedule(id: string): Promise<CronScheduleView> {
    return this.#request("GET", `/v1/schedules/${enc_(id)}`);
  }
  setSchedulePaused(id: string, paused: boolean): Promise<CronScheduleView> {
    return this.#request("POST", `/v1/schedules/${enc_(id)}/${paused ? "pause" : "resume"}`);
  }
  async deleteSchedule(id: string): Promise<void> {
    await this.#request("DELETE", `/v1/schedules/${enc_(id)}`);
  }

  /** Creates or replaces a group's webhook subscription; the answer shows its secrets. */
  upsertSubscription(group: string, input: SubscriptionInput): Promise<SubscriptionView> {
    return this.#request("PUT", `/v1/subscriptions/${enc_(group)}`, { json: input });
  }
  async listSubscriptions(): Promise<SubscriptionView[]> {
    return (await this.#request<{ subscriptions: SubscriptionView[] }>(
      "GET",
      "/v1/subscriptions",
    )).subscriptions;
  }
  getSubscription(group: string): Promise<SubscriptionView> {
    return this.#request("GET", `/v1/subscriptions/${enc_(group)}`);
  }
  async deleteSubscription(group: string): Promise<void> {
    await this.#request("DELETE", `/v1/subscriptions/${enc_(group)}`);
  }
  setSubscriptionPaused(group: string, paused: boolean): Promise<SubscriptionView> {
    return this.#request(
      "POST",
      `/v1/subscriptions/${enc_(group)}/${paused ? "pause" : "resume"}`,
    );
  }
  replaySubscription(group: string, timestamp: number): Promise<SubscriptionView> {
    return this.#request("POST", `/v1/subscriptions/${enc_(group)}/replay`, {
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
    return (await this.#request<{ deliveries: DeliveryAttempt[] }>(
      "GET",
      `/v1/subscriptions/${enc_(group)}/deliveries${qs}`,
    )).deliveries;
  }

  async #request<T>(
    method: string,
    path: string,
    options: {
      headers?: Record<string, string>;
      body?: Uint8Array;
      json?: unknown;
      signal?: AbortSignal;
      okStatuses?: number[];
    } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: BodyInit | undefined = options.body as BodyInit | undefined;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    let res: Response;
    try {
      res = await this.#fetch(`${this.#base}${path}`, {
        method,
        headers,
        body,
        signal: options.signal,
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new BrokerError(
        "BROKER_UNAVAILABLE",
        `Cannot reach ${this.#base}: ${(err as Error).message}`,
        {},
        { cause: err },
      );
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    const ok = res.ok || (options.okStatuses?.includes(res.status) ?? false);
    let value: unknown;
    try {
      value = text ? JSON.parse(text) : undefined;
    } catch {
      throw new BrokerError(
        res.status >= 500 ? "BROKER_UNAVAILABLE" : "BAD_REQUEST",
        `Broker answered ${res.status} with a body that is not JSON`,
      );
    }
    if (!ok) throw BrokerError.fromProblem((value ?? {}) as Record<string, unknown>, res.status);
    return value as T;
  }
}

/** The body of a pulled message as bytes. */
export function messageBody(message: WireMessage): Uint8Array {
  if (message.bodyEncoding === "utf8") return enc.encode(message.body);
  const s = atob(message.body);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function enc_(segment: string): string {
  return encodeURIComponent(segment);
}
