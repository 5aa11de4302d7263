// Where QStash's things live in our engine: a queue and a URL group are topics, each
// delivered by webhook subscriptions in the "qstash" dialect (runtime/protocol/qstash.ts
// names them). The first publish to a place creates its topic and subscription.
import type { AdminApi, BrokerClient, QstashApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  QSTASH_CALLBACK_TOPIC,
  QSTASH_ENDPOINT_SEPARATOR,
  QSTASH_FLOW_PREFIX,
  QSTASH_PUBLISH_TOPIC,
  QSTASH_QUEUE_PREFIX,
  QSTASH_URL_GROUP_PREFIX,
  type QstashSettings,
} from "../../runtime/protocol/qstash.ts";
import type { SubscriptionView } from "../../runtime/protocol/types.ts";
import type { ApiSource, RouteContext, RouteDeps } from "../routes/route.ts";
import type { FlowControl } from "./headers.ts";

export interface QstashDeps extends Omit<RouteDeps<BrokerClient>, "api"> {
  api: ApiSource<BrokerClient>;
  qstash: QstashApi;
}

/** How long a URL group's endpoint list is reused by publishes. */
const ENDPOINTS_CACHE_MS = 1000;
const NAME = /^[a-zA-Z0-9_-]{1,80}$/;

/** A QStash name (queue, URL group, endpoint) we can turn into a topic or group name. */
export function checkQstashName(kind: string, name: string): string {
  if (!NAME.test(name)) {
    throw new BrokerError(
      "INVALID_NAME",
      `Cannot use ${kind} name ${JSON.stringify(name.slice(0, 100))}: 1-80 of [a-zA-Z0-9_-]`,
    );
  }
  return name;
}

export const queueTopic = (queue: string) => QSTASH_QUEUE_PREFIX + checkQstashName("queue", queue);
export const flowTopic = (key: string) =>
  QSTASH_FLOW_PREFIX + checkQstashName("flow-control key", key);
/** A flow-control key's limits as a subscription's (rate: a whole number per second). */
export function flowLimits(fc: FlowControl, s: QstashSettings) {
  let ratePerSec = 0;
  if (fc.rate !== undefined) {
    ratePerSec = fc.rate * 1000 / fc.periodMs;
    if (!Number.isInteger(ratePerSec) || ratePerSec < 1) {
      throw new BrokerError(
        "INVALID_HEADER",
        "Upstash-Flow-Control-Value: rate per period must come to a whole number per second",
      );
    }
  }
  return { maxConcurrency: fc.parallelism ?? s.concurrency, ratePerSec };
}

export const groupTopic = (group: string) =>
  QSTASH_URL_GROUP_PREFIX + checkQstashName("URL group", group);
export const endpointGroup = (topic: string, endpoint: string) =>
  topic + QSTASH_ENDPOINT_SEPARATOR + endpoint;

export function isQstashSubscription(s: SubscriptionView): boolean {
  return s.dialect === "qstash";
}

/** Creates the topics and subscriptions QStash needs, once per name per process. */
export class Plumbing {
  readonly #ready = new Set<string>();
  /** Flow-control topic -> the limits its subscription was last given. */
  readonly #flows = new Map<string, string>();
  readonly #urls = new Map<string, { urls: string[]; at: number }>();
  #settings: QstashSettings | undefined;

  constructor(private readonly deps: QstashDeps) {}

  async settings(): Promise<QstashSettings> {
    return this.#settings ??= await this.deps.qstash.qstashSettings();
  }

  /** The topic messages to a URL go to: the shared one, or the queue's. */
  async urlTopic(queue?: string): Promise<string> {
    if (queue === undefined) {
      await this.#ensure(QSTASH_PUBLISH_TOPIC, { ordered: false });
      return QSTASH_PUBLISH_TOPIC;
    }
    const topic = queueTopic(queue);
    if (!this.#ready.has(topic)) {
      const exists = await this.deps.api.call((b) =>
        Promise.resolve().then(() => b.getSubscription(topic)).then(() => true, () => false)
      );
      if (!exists) await this.upsertQueue(queue, 1);
      this.#ready.add(topic);
    }
    return topic;
  }

  callbacks(): Promise<void> {
    return this.#ensure(QSTASH_CALLBACK_TOPIC, { ordered: false });
  }

  async upsertQueue(queue: string, parallelism: number): Promise<SubscriptionView> {
    const topic = queueTopic(queue);
    const s = await this.settings();
    // One queue in the topic: with parallelism 1 an ordered subscription is strict FIFO. On
    // one broker group in a cluster: each group delivers its own queues (docs/cluster.md).
    await this.deps.api.call((b) =>
      b.upsertTopic(topic, { readQueueNums: 1, writeQueueNums: 1, brokerGroupCount: 1 })
    );
    const view = await this.deps.api.call((b) =>
      b.upsertSubscription(topic, {
        topic,
        url: "",
        dialect: "qstash",
        ordered: parallelism === 1,
        maxConcurrency: parallelism,
        retryMaxTimes: s.retriesDefault,
        retryBackoffMs: s.retryBackoffMs,
        startFrom: "earliest",
      })
    );
    this.#ready.add(topic);
    return view;
  }

  /** Adds (or replaces) an endpoint of a URL group. */
  async addEndpoint(group: string, endpoint: string, url: string): Promise<void> {
    const topic = groupTopic(group);
    const s = await this.settings();
    await this.deps.qstash.checkDestination(url);
    this.#urls.delete(group);
    await this.deps.api.call((b) => b.upsertTopic(topic, {}));
    await this.deps.api.call((b) =>
      b.upsertSubscription(endpointGroup(topic, endpoint), {
        topic,
        url,
        dialect: "qstash",
        maxConcurrency: s.concurrency,
        retryMaxTimes: s.retriesDefault,
        retryBackoffMs: s.retryBackoffMs,
      })
    );
  }

  /** Endpoints of a URL group (its subscriptions). */
  async endpoints(api: Pick<AdminApi, "listSubscriptions">, group: string) {
    const topic = groupTopic(group);
    return (await api.listSubscriptions()).filter((s) =>
      s.dialect === "qstash" && s.topic === topic
    );
  }

  /** The endpoint URLs a publish to `group` answers with: listing every subscription per
   * publish costs more than the publish, so they are kept for ENDPOINTS_CACHE_MS (and
   * dropped at once when this process changes the group). */
  async endpointUrls(group: string): Promise<string[]> {
    const cached = this.#urls.get(group);
    const now = performance.now();
    if (cached && now - cached.at < ENDPOINTS_CACHE_MS) return cached.urls;
    const urls = (await this.deps.api.call((b) => this.endpoints(b, group))).map((s) => s.url);
    this.#urls.set(group, { urls, at: now });
    return urls;
  }

  /** The topic of a flow-control key, its subscription set to the message's limits
   * (messages bring the key's settings, as on QStash; a change restarts its deliveries). */
  async flowTopic(fc: FlowControl): Promise<string> {
    const topic = flowTopic(fc.key);
    const s = await this.settings();
    const { maxConcurrency, ratePerSec } = flowLimits(fc, s);
    const config = `${maxConcurrency}/${ratePerSec}`;
    if (this.#flows.get(topic) === config) return topic;
    await this.deps.api.call(async (b) => {
      // One group in a cluster, so the key's limits hold once, not once per group.
      await b.upsertTopic(topic, { brokerGroupCount: 1 });
      await b.upsertSubscription(topic, {
        topic,
        url: "",
        dialect: "qstash",
        maxConcurrency,
        ratePerSec,
        retryMaxTimes: s.retriesDefault,
        retryBackoffMs: s.retryBackoffMs,
        startFrom: "earliest",
      });
    });
    this.#flows.set(topic, config);
    return topic;
  }

  forget(topic: string) {
    this.#ready.delete(topic);
    this.#urls.clear();
  }

  async #ensure(topic: string, o: { ordered: boolean }) {
    if (this.#ready.has(topic)) return;
    const s = await this.settings();
    await this.deps.api.call(async (b) => {
      const exists = await Promise.resolve().then(() => b.getSubscription(topic)).then(
        () => true,
        () => false,
      );
      if (exists) return;
      await b.upsertTopic(topic, {});
      await b.upsertSubscription(topic, {
        topic,
        url: "",
        dialect: "qstash",
        ordered: o.ordered,
        maxConcurrency: s.concurrency,
        retryMaxTimes: s.retriesDefault,
        retryBackoffMs: s.retryBackoffMs,
        startFrom: "earliest",
      });
    });
    this.#ready.add(topic);
  }
}

export type { RouteContext };
