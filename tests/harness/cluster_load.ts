// Load for cluster tests and the cluster bench (issue #26): producers that remember every
// acknowledged message (and its global queue), pull consumers that own a share of a
// topic's global queues and remember every message they read, and the checks over both:
// each acknowledged message read exactly once per consumer group, order per sharding key.
import { MqClient, type ProduceResult } from "../../client/mod.ts";
import type { TopicRouteView } from "../../runtime/protocol/cluster_types.ts";

export interface Acked {
  body: string;
  key?: string;
  seq: number;
  queueId: number;
  messageId: string;
  /** When the produce was sent (the router picked its group then), and acknowledged. */
  sentAt: number;
  at: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Global queue ids of a topic: from the cluster route when the router serves it, else the
 * broker's own 0..readQueueNums-1 (one group). */
export async function topicQueues(url: string, topic: string): Promise<number[]> {
  const client = new MqClient({ baseUrl: url, retries: 0 });
  const res = await fetch(`${url}/v1/topics/${encodeURIComponent(topic)}/route`);
  if (res.ok) {
    const view = await res.json() as { queues: { queueId: number; readable: boolean }[] };
    return view.queues.filter((q) => q.readable).map((q) => q.queueId);
  }
  await res.body?.cancel();
  const config = await client.getTopic(topic);
  return Array.from({ length: config.readQueueNums }, (_, i) => i);
}

/** Produces `${name}-${seq}` bodies one at a time (so order per key is the send order),
 * alternating over `urls` (several functions processes); a refused or failed call is
 * remembered as failed and never retried with the same body. */
export class LoadProducer {
  readonly acked: Acked[] = [];
  readonly failed: { body: string; error: string }[] = [];
  #clients: MqClient[];
  #seq = 0;
  #running: Promise<void> | undefined;
  #stop = false;

  constructor(
    urls: string[],
    readonly topic: string,
    readonly name: string,
    /** Sharding keys to rotate over; none: the router picks the queue. */
    readonly keys = 0,
  ) {
    this.#clients = urls.map((baseUrl) => new MqClient({ baseUrl, retries: 0 }));
  }

  async send(): Promise<ProduceResult | undefined> {
    const seq = this.#seq++;
    const body = `${this.name}-${seq}`;
    const key = this.keys > 0 ? `${this.name}-k${seq % this.keys}` : undefined;
    const client = this.#clients[seq % this.#clients.length];
    const sentAt = Date.now();
    try {
      const r = await client.produce(this.topic, {
        body,
        ...(key !== undefined && { shardingKey: key }),
      });
      this.acked.push({
        body,
        key,
        seq,
        queueId: r.queueId,
        messageId: r.messageId,
        sentAt,
        at: Date.now(),
      });
      return r;
    } catch (err) {
      this.failed.push({ body, error: String(err) });
      return undefined;
    }
  }

  async sendMany(count: number): Promise<void> {
    for (let i = 0; i < count; i++) await this.send();
  }

  /** Produces in the background (with `pauseMs` between calls) until stop(). */
  start(pauseMs = 5): void {
    this.#stop = false;
    this.#running = (async () => {
      while (!this.#stop) {
        const ok = await this.send();
        await sleep(ok ? pauseMs : 50);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#running;
  }

  /** Acks since `sinceMs` whose queue is in `queues`. */
  ackedOn(queues: Set<number>, sinceMs = 0): number {
    return this.acked.filter((a) => a.at >= sinceMs && queues.has(a.queueId)).length;
  }
}

/** One message as a consumer read it: enough to tell, when a body is read twice, whether
 * it was stored twice (two message ids) or one record was delivered twice. */
export interface ReadCopy {
  body: string;
  offset: number;
  messageId: string;
  commitLogOffset: number;
  bornTimestamp: number;
}

/** A pull consumer of one consumer group owning the global queues `share` picks (queueId
 * % of === index) out of the topic's queue list; it reads from the group's committed offset, commits
 * after each batch, and remembers what it read per queue in offset order. */
export class PullConsumer {
  readonly read = new Map<number, ReadCopy[]>();
  /** The last failure per queue (a group failing over, a queue that went away). */
  readonly errors = new Map<number, string>();
  /** Where this consumer goes on per queue: a group that fails over may come back with an
   * older committed offset than this consumer reached (RocketMQ keeps it in memory too). */
  readonly #next = new Map<number, number>();
  #client: MqClient;
  #loop: Promise<void> | undefined;
  #stop = false;

  constructor(
    readonly url: string,
    readonly topic: string,
    readonly group: string,
    readonly share: { index: number; of: number } = { index: 0, of: 1 },
  ) {
    this.#client = new MqClient({ baseUrl: url, retries: 0 });
  }

  /** One pass over this consumer's queues: pulls each until it has nothing new.
   * Returns how many messages it read. Failures (a group failing over) are skipped. */
  async pass(): Promise<number> {
    const all = await topicQueues(this.url, this.topic).catch(() => [] as number[]);
    // By the global id, not the list index: a queue keeps its owner when groups join or
    // leave the topic (no two consumers of the group read one queue at once).
    const mine = all.filter((q) => q % this.share.of === this.share.index);
    let n = 0;
    for (const q of mine) {
      n += await this.#drainQueue(q).catch((err) => {
        this.errors.set(q, String(err));
        return 0;
      });
    }
    return n;
  }

  /** Passes in the background until stop(). */
  start(pauseMs = 50): void {
    this.#stop = false;
    this.#loop = (async () => {
      while (!this.#stop) {
        await this.pass();
        await sleep(pauseMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#loop;
  }

  async #drainQueue(queueId: number): Promise<number> {
    const committed = (await this.#client.getOffset(this.group, this.topic, queueId)).offset;
    let offset = Math.max(committed, this.#next.get(queueId) ?? 0);
    let n = 0;
    for (;;) {
      const r = await this.#client.pull(this.topic, queueId, { offset, max: 64 });
      if (r.messages.length === 0) return n;
      const got = this.read.get(queueId) ?? [];
      for (const m of r.messages) {
        got.push({
          body: m.body,
          offset: m.queueOffset,
          messageId: m.messageId,
          commitLogOffset: m.commitLogOffset,
          bornTimestamp: m.bornTimestamp,
        });
      }
      this.read.set(queueId, got);
      n += r.messages.length;
      offset = r.nextOffset;
      this.#next.set(queueId, offset);
      await this.#client.commitOffset(this.group, this.topic, queueId, offset);
    }
  }
}

/** Bodies read by a consumer group (all its consumers), counted. */
export function readCounts(consumers: PullConsumer[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const c of consumers) {
    for (const list of c.read.values()) {
      for (const m of list) counts.set(m.body, (counts.get(m.body) ?? 0) + 1);
    }
  }
  return counts;
}

/** Passes until every acked body was read (or the deadline), then one more pass. */
export async function consumeAll(
  consumers: PullConsumer[],
  acked: Acked[],
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    await Promise.all(consumers.map((c) => c.pass()));
    const counts = readCounts(consumers);
    if (acked.every((a) => counts.has(a.body))) break;
    await sleep(100);
  }
  await Promise.all(consumers.map((c) => c.pass()));
}

/** What went wrong for one consumer group: acked bodies missing or read twice, unacked
 * bodies read twice, and per-key order broken inside a queue. Empty when all holds. */
export function groupProblems(consumers: PullConsumer[], acked: Acked[]): string[] {
  const counts = readCounts(consumers);
  const problems: string[] = [];
  const missing = acked.filter((a) => !counts.has(a.body)).map((a) => `${a.body}@${a.queueId}`);
  if (missing.length) {
    const errors = consumers.flatMap((c) => [...c.errors].map(([q, e]) => `q${q}: ${e}`));
    problems.push(
      `${missing.length} acked never read: ${missing.slice(0, 5)}; last errors: ${
        errors.slice(-3).join(" | ")
      }`,
    );
  }
  const twice = [...counts].filter(([, n]) => n > 1).map(([b]) => b);
  if (twice.length) {
    const where = twice.slice(0, 3).map((b) => `${b} [${copiesOf(consumers, acked, b)}]`);
    problems.push(`${twice.length} read more than once: ${where.join("; ")}`);
  }
  // Order per key: in each queue (offset order), one key's sequence numbers only grow.
  const keyOf = new Map(acked.filter((a) => a.key).map((a) => [a.body, a]));
  for (const c of consumers) {
    for (const [queueId, list] of c.read) {
      const last = new Map<string, number>();
      for (const m of [...list].sort((a, b) => a.offset - b.offset)) {
        const a = keyOf.get(m.body);
        if (!a?.key) continue;
        const prev = last.get(a.key) ?? -1;
        if (a.seq < prev) {
          problems.push(`queue ${queueId}: key ${a.key} seq ${a.seq} after ${prev}`);
        }
        last.set(a.key, a.seq);
      }
    }
  }
  return problems;
}

/** Where each copy of `body` was read, and where its producer was told it went. */
function copiesOf(consumers: PullConsumer[], acked: Acked[], body: string): string {
  const copies = consumers.flatMap((c) =>
    [...c.read].flatMap(([q, list]) =>
      list.filter((m) => m.body === body).map((m) =>
        `q${q}@${m.offset} id ${m.messageId} clo ${m.commitLogOffset} born ${m.bornTimestamp}`
      )
    )
  );
  const a = acked.find((x) => x.body === body);
  return `${copies.join(", ")}; acked ${
    a ? `on q${a.queueId} id ${a.messageId} at ${a.at}` : "never"
  }`;
}

/** Keys whose acked messages landed on more than one queue among `acked`. */
export function keysOnSeveralQueues(acked: Acked[]): string[] {
  const queues = new Map<string, Set<number>>();
  for (const a of acked) {
    if (a.key) queues.set(a.key, (queues.get(a.key) ?? new Set()).add(a.queueId));
  }
  return [...queues].filter(([, qs]) => qs.size > 1).map(([k]) => k);
}

/** A problem+json refusal, with its code. */
export class RouteAdminError extends Error {
  constructor(readonly status: number, readonly code: string | undefined, detail: string) {
    super(`${status} ${code}: ${detail}`);
  }
}

/** The cluster's route admin over HTTP (GET /v1/topics/{t}/route and its groups). */
export function routeAdmin(url: string) {
  const call = async <T>(method: string, path: string, json?: unknown): Promise<T> => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: json === undefined ? {} : { "content-type": "application/json" },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const value = await res.json().catch(() => undefined);
    if (!res.ok) throw new RouteAdminError(res.status, value?.code, value?.detail ?? "");
    return value as T;
  };
  const t = (topic: string) => `/v1/topics/${encodeURIComponent(topic)}/route`;
  const g = (group: string) => `/groups/${encodeURIComponent(group)}`;
  return {
    route: (topic: string) => call<TopicRouteView>("GET", t(topic)),
    add: (topic: string, brokerGroup: string) =>
      call<TopicRouteView>("POST", `${t(topic)}/groups`, { brokerGroup }),
    drain: (topic: string, group: string) =>
      call<TopicRouteView>("POST", `${t(topic)}${g(group)}/drain`),
    remove: (topic: string, group: string) =>
      call<TopicRouteView>("DELETE", `${t(topic)}${g(group)}`),
  };
}
