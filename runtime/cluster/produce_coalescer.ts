// Coalescing of single produces (issue #26, bench/README.md "Cluster"): produces bound for
// the same broker group and topic that arrive in the same turn of the event loop go out as
// one produceBatch call, as RocketMQ 5's proxy and Kafka's producer (linger) batch, and
// each caller gets its own item's answer. The broker's batch route stores every item as
// its single produce would (idempotency keys, message ids, delays, queue ids ride along per
// item), so only the transport changes. A lone message goes as a single produce; a large
// one (over clusterProduceCoalesceBytesMax) always does, and so does one whose fields the
// single produce's headers would change (single_form.ts: the batch item must store what
// the single produce stores, or an idempotent repeat would not match). A failure of the whole batch
// rejects every item with that same error, so the router's rules (fault.ts
// isSendElsewhere) hold per item as for a single produce; a batch the broker refuses as a
// request (400 / 413: nothing stored) is sent again one message at a time.
import { setImmediate } from "node:timers";
import { BrokerError, type ProblemJson } from "../protocol/errors.ts";
import type { BatchItemResult, ProduceMessage, ProduceResult } from "../protocol/types.ts";
import type { GroupLink } from "./route_source.ts";
import { singleForm } from "./single_form.ts";

export interface CoalesceSettings {
  clusterProduceCoalesceEnable: boolean;
  clusterProduceCoalesceItemsMax: number;
  clusterProduceCoalesceBytesMax: number;
}

interface Waiter {
  message: ProduceMessage;
  /** The message as a batch item (single_form.ts). */
  item: ProduceMessage;
  resolve: (r: ProduceResult) => void;
  reject: (err: unknown) => void;
}

interface Open {
  link: GroupLink;
  topic: string;
  waiters: Waiter[];
  bytes: number;
}

type Client = GroupLink["client"];

export class ProduceCoalescer {
  /** Batches being gathered this turn, per group link, then per topic. */
  readonly #open = new Map<GroupLink, Map<string, Open>>();
  #scheduled = false;
  /** Batch calls made and the messages they carried (the functions' /metrics). */
  batches = 0;
  messages = 0;

  constructor(
    private readonly settings: CoalesceSettings,
    private readonly schedule: (f: () => void) => void = setImmediate,
  ) {}

  produce(link: GroupLink, topic: string, message: ProduceMessage): Promise<ProduceResult> {
    const s = this.settings;
    const size = message.body.byteLength;
    const item = s.clusterProduceCoalesceEnable && s.clusterProduceCoalesceItemsMax > 1 &&
        size <= s.clusterProduceCoalesceBytesMax
      ? singleForm(message)
      : undefined;
    if (item === undefined) return link.client.produce(topic, message);
    let topics = this.#open.get(link);
    if (topics === undefined) this.#open.set(link, topics = new Map());
    let open = topics.get(topic);
    if (open !== undefined && open.bytes + size > s.clusterProduceCoalesceBytesMax) {
      this.#flush(topics, open);
      open = undefined;
    }
    if (open === undefined) topics.set(topic, open = { link, topic, waiters: [], bytes: 0 });
    const opened = open;
    const answer = new Promise<ProduceResult>((resolve, reject) => {
      opened.waiters.push({ message, item, resolve, reject });
    });
    opened.bytes += size;
    if (opened.waiters.length >= s.clusterProduceCoalesceItemsMax) this.#flush(topics, opened);
    else if (!this.#scheduled) {
      this.#scheduled = true;
      this.schedule(() => this.#flushAll());
    }
    return answer;
  }

  #flushAll(): void {
    this.#scheduled = false;
    const all = [...this.#open.values()];
    this.#open.clear();
    for (const topics of all) for (const open of topics.values()) this.#send(open);
  }

  #flush(topics: Map<string, Open>, open: Open): void {
    topics.delete(open.topic); // the link's map stays: #flushAll clears it
    this.#send(open);
  }

  #send({ link, topic, waiters }: Open): void {
    if (waiters.length === 1) return alone(link.client, topic, waiters[0]);
    this.batches++;
    this.messages += waiters.length;
    link.client.produceBatch(topic, waiters.map((w) => w.item)).then(
      (results) => settle(waiters, results),
      (err) => {
        if (refusedAsRequest(err)) { for (const w of waiters) alone(link.client, topic, w); }
        else for (const w of waiters) w.reject(err);
      },
    );
  }
}

function alone(client: Client, topic: string, w: Waiter): void {
  client.produce(topic, w.message).then(w.resolve, w.reject);
}

function settle(waiters: Waiter[], results: BatchItemResult[]): void {
  waiters.forEach((w, i) => {
    const r = results[i];
    if (r === undefined) {
      w.reject(
        new BrokerError(
          "INTERNAL",
          `Broker answered ${results.length} items for a batch of ${waiters.length}`,
        ),
      );
    } else if (r.ok) {
      const { ok: _, ...result } = r;
      w.resolve(result);
    } else {
      w.reject(BrokerError.fromProblem(r.error as Partial<ProblemJson>, r.error.status));
    }
  });
}

/** A batch refused whole as a malformed or too large request: the broker stored nothing,
 * and each message alone may well be fine. */
function refusedAsRequest(err: unknown): boolean {
  return err instanceof BrokerError && (err.status === 400 || err.status === 413);
}
