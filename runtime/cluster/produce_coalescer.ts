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
// request (400 / 413: nothing stored) is sent again one message at a time. While
// clusterProduceCoalesceInFlightMax calls of a group and topic (a lane) are out, its next
// batch lingers: it keeps growing until a call comes back or a cap is reached, so batches
// grow under load while an idle lane still sends at the end of the turn (round 3 in
// bench/README.md).
import { setImmediate } from "node:timers";
import { BrokerError, type ProblemJson } from "../protocol/errors.ts";
import type { BatchItemResult, ProduceMessage, ProduceResult } from "../protocol/types.ts";
import type { GroupLink } from "./route_source.ts";
import { singleForm } from "./single_form.ts";

export interface CoalesceSettings {
  clusterProduceCoalesceEnable: boolean;
  clusterProduceCoalesceItemsMax: number;
  clusterProduceCoalesceBytesMax: number;
  /** Calls in flight per group link and topic before the next batch lingers; 0: never. */
  clusterProduceCoalesceInFlightMax: number;
}

interface Waiter {
  message: ProduceMessage;
  /** The message as a batch item (single_form.ts). */
  item: ProduceMessage;
  resolve: (r: ProduceResult) => void;
  reject: (err: unknown) => void;
}

/** One group link and topic: the batch being gathered and the calls in flight. */
interface Lane {
  link: GroupLink;
  topic: string;
  waiters: Waiter[];
  bytes: number;
  inFlight: number;
}

type Client = GroupLink["client"];

export class ProduceCoalescer {
  /** Lanes with a batch open or a call in flight, per group link, then per topic. */
  readonly #lanes = new Map<GroupLink, Map<string, Lane>>();
  /** Lanes whose open batch goes at the end of this turn (unless it lingers). */
  #due: Lane[] = [];
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
    let topics = this.#lanes.get(link);
    if (topics === undefined) this.#lanes.set(link, topics = new Map());
    let lane = topics.get(topic);
    if (lane === undefined) {
      topics.set(topic, lane = { link, topic, waiters: [], bytes: 0, inFlight: 0 });
    }
    if (lane.waiters.length > 0 && lane.bytes + size > s.clusterProduceCoalesceBytesMax) {
      this.#send(lane);
    }
    const open = lane;
    const answer = new Promise<ProduceResult>((resolve, reject) => {
      open.waiters.push({ message, item, resolve, reject });
    });
    open.bytes += size;
    if (open.waiters.length >= s.clusterProduceCoalesceItemsMax) this.#send(open);
    else if (open.waiters.length === 1) {
      this.#due.push(open);
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.schedule(() => this.#endOfTurn());
      }
    }
    return answer;
  }

  /** The open batches go, but a lane with its calls in flight at the cap lingers: its batch
   * keeps growing (up to the item and byte caps) until a call comes back. */
  #endOfTurn(): void {
    this.#scheduled = false;
    const due = this.#due;
    this.#due = [];
    for (const lane of due) if (!this.#lingers(lane)) this.#send(lane);
  }

  #lingers(lane: Lane): boolean {
    const max = this.settings.clusterProduceCoalesceInFlightMax;
    return max > 0 && lane.inFlight >= max;
  }

  /** A call of `lane` came back: its lingering batch goes now, and an idle lane is dropped. */
  #returned(lane: Lane): void {
    lane.inFlight--;
    if (lane.waiters.length > 0) {
      if (!this.#lingers(lane)) this.#send(lane);
    } else if (lane.inFlight === 0) {
      const topics = this.#lanes.get(lane.link);
      if (topics?.get(lane.topic) === lane) {
        topics.delete(lane.topic);
        if (topics.size === 0) this.#lanes.delete(lane.link);
      }
    }
  }

  #send(lane: Lane): void {
    const { link, topic, waiters } = lane;
    if (waiters.length === 0) return; // sent already this turn (a cap was reached)
    lane.waiters = [];
    lane.bytes = 0;
    lane.inFlight++;
    const done = () => this.#returned(lane);
    if (waiters.length === 1) return alone(link.client, topic, waiters[0], done);
    this.batches++;
    this.messages += waiters.length;
    link.client.produceBatch(topic, waiters.map((w) => w.item)).then(
      (results) => {
        done();
        settle(waiters, results);
      },
      (err) => {
        done();
        if (refusedAsRequest(err)) { for (const w of waiters) alone(link.client, topic, w); }
        else for (const w of waiters) w.reject(err);
      },
    );
  }
}

function alone(client: Client, topic: string, w: Waiter, done?: () => void): void {
  const sent = client.produce(topic, w.message);
  if (done === undefined) sent.then(w.resolve, w.reject);
  else {
    sent.then((r) => {
      done();
      w.resolve(r);
    }, (err) => {
      done();
      w.reject(err);
    });
  }
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
