// Produce and consume counters per topic (messages and body bytes), kept in memory since
// the broker started, and a produce rate over a sliding window of a few samples. Read by
// the topic statistics (ops_views.ts) and the Prometheus exposition (observability.ts).

export interface TopicTraffic {
  producedMessages: number;
  producedBytes: number;
  consumedMessages: number;
  consumedBytes: number;
}

/** Samples kept for the rate: one per RATE_SAMPLE_MS, RATE_SAMPLES of them (about 60 s). */
const RATE_SAMPLE_MS = 5_000;
const RATE_SAMPLES = 12;

/** A topic's counters and its rate samples in one record: a produce looks the topic up once
 * (with 1,000 topics each lookup is a cache miss; bench/README.md, Round 5). */
interface TopicEntry extends TopicTraffic {
  /** [time, producedMessages], oldest first. */
  readonly samples: Array<[number, number]>;
}

export class TrafficCounters {
  readonly #topics = new Map<string, TopicEntry>();
  readonly #nowMs: () => number;

  constructor(nowMs: () => number) {
    this.#nowMs = nowMs;
  }

  #of(topic: string): TopicEntry {
    let t = this.#topics.get(topic);
    if (t === undefined) {
      t = {
        producedMessages: 0,
        producedBytes: 0,
        consumedMessages: 0,
        consumedBytes: 0,
        samples: [[this.#nowMs(), 0]],
      };
      this.#topics.set(topic, t);
    }
    return t;
  }

  produced(topic: string, messages: number, bytes: number): void {
    const t = this.#of(topic);
    t.producedMessages += messages;
    t.producedBytes += bytes;
    this.#sample(t);
  }

  consumed(topic: string, messages: number, bytes: number): void {
    const t = this.#of(topic);
    t.consumedMessages += messages;
    t.consumedBytes += bytes;
  }

  get(topic: string): TopicTraffic {
    const t = this.#topics.get(topic);
    return t === undefined
      ? { producedMessages: 0, producedBytes: 0, consumedMessages: 0, consumedBytes: 0 }
      : counters(t);
  }

  *entries(): IterableIterator<[string, TopicTraffic]> {
    for (const [topic, t] of this.#topics) yield [topic, counters(t)];
  }

  forget(topic: string): void {
    this.#topics.delete(topic);
  }

  /** Messages per second produced to `topic` over the sampled window. */
  produceRate(topic: string): number {
    const t = this.#topics.get(topic);
    if (t === undefined) return 0;
    this.#sample(t);
    const [at, count] = t.samples[0];
    const seconds = Math.max(1, (this.#nowMs() - at) / 1000);
    return (t.producedMessages - count) / seconds;
  }

  #sample(t: TopicEntry): void {
    const samples = t.samples;
    const now = this.#nowMs();
    if (now - samples[samples.length - 1][0] < RATE_SAMPLE_MS) return;
    samples.push([now, t.producedMessages]);
    if (samples.length > RATE_SAMPLES) samples.shift();
  }
}

function counters(t: TopicEntry): TopicTraffic {
  const { producedMessages, producedBytes, consumedMessages, consumedBytes } = t;
  return { producedMessages, producedBytes, consumedMessages, consumedBytes };
}

/** Bytes of a message body as the API carries it (utf8 text, or base64 of bytes). */
export function bodyBytes(body: string | Uint8Array, encoding?: string): number {
  if (typeof body !== "string") return body.byteLength;
  return encoding === "base64" ? Math.floor(body.length * 3 / 4) : body.length;
}
