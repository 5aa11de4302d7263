// Load for the cluster bench (the hop ratio runs autocannonPost from bench/support.ts):
// batch produce for the group balance, and a paced open-loop producer that records each
// call's latency and the group that took it, for the failover phase.
import { readFileSync } from "node:fs";
import { MqClient } from "../../client/mod.ts";
import { splitQueueId, type TopicRouteView } from "../../runtime/protocol/cluster_types.ts";

/** Slot → group name of a topic's route (global queue id = slot × 1024 + local id). */
export async function slotGroups(url: string, topic: string): Promise<Map<number, string>> {
  const res = await fetch(`${url}/v1/topics/${encodeURIComponent(topic)}/route`);
  if (!res.ok) throw new Error(`GET route of ${topic}: ${res.status} ${await res.text()}`);
  const view = await res.json() as TopicRouteView;
  return new Map(view.brokerGroups.map((g) => [g.slot, g.name]));
}

/** Produces `total` small messages in batches of `batch` with `inFlight` calls at once;
 * returns how many each group took. */
export async function batchSpread(
  url: string,
  topic: string,
  total: number,
  batch: number,
  inFlight: number,
): Promise<{ perGroup: Map<string, number>; failed: number; seconds: number }> {
  const client = new MqClient({ baseUrl: url, retries: 0 });
  const groups = await slotGroups(url, topic);
  const perGroup = new Map<string, number>();
  let failed = 0;
  let sent = 0;
  const body = "x".repeat(16);
  const started = performance.now();
  const worker = async () => {
    while (sent < total) {
      const n = Math.min(batch, total - sent);
      sent += n;
      const results = await client.produceBatch(
        topic,
        Array.from({ length: n }, () => ({ body })),
      ).catch(() => undefined);
      if (!results) {
        failed += n;
        continue;
      }
      for (const r of results) {
        if (!r.ok) {
          failed++;
          continue;
        }
        const name = groups.get(splitQueueId(r.queueId).slot) ?? "?";
        perGroup.set(name, (perGroup.get(name) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { perGroup, failed, seconds: (performance.now() - started) / 1000 };
}

export interface Sample {
  at: number;
  ms: number;
  group?: string;
  ok: boolean;
}

/** Fires one produce every 1000/rate ms (open loop: a slow answer does not delay the next
 * call) until stop(); each call's latency and the group that took it are recorded. */
export class PacedProducer {
  readonly samples: Sample[] = [];
  #timer: ReturnType<typeof setInterval> | undefined;
  #pending = new Set<Promise<void>>();

  constructor(
    readonly client: MqClient,
    readonly topic: string,
    readonly groups: Map<number, string>,
  ) {}

  start(rate: number): void {
    const body = "y".repeat(256);
    this.#timer = setInterval(() => {
      const at = performance.now();
      const p = this.client.produce(this.topic, { body }, { timeoutMs: 10_000 }).then(
        (r) => {
          const group = this.groups.get(splitQueueId(r.queueId).slot);
          this.samples.push({ at, ms: performance.now() - at, group, ok: true });
        },
        () => {
          this.samples.push({ at, ms: performance.now() - at, ok: false });
        },
      ).finally(() => this.#pending.delete(p));
      this.#pending.add(p);
    }, 1000 / rate);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all([...this.#pending]);
  }
}

/** CPU seconds (user + system) a process has used so far (Linux /proc; undefined
 * elsewhere or once it is gone). */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after "pid (comm) ".
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Linux's USER_HZ on every platform we run on. */
const CLOCK_TICKS = 100;

/** CPU µs per message that `pids` spent together between two cpuSeconds() samples. */
export class CpuMeter {
  #start: number[];
  constructor(readonly pids: number[]) {
    this.#start = pids.map((p) => cpuSeconds(p) ?? NaN);
  }

  usPerMessage(messages: number): number | null {
    const used = this.pids.reduce(
      (sum, p, i) => sum + ((cpuSeconds(p) ?? NaN) - this.#start[i]),
      0,
    );
    return Number.isFinite(used) && messages > 0
      ? Math.round((used * 1e6) / messages * 10) / 10
      : null;
  }
}
