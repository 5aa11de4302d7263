// Transaction checks for producers connected to a functions process (issue #26): a broker
// group cannot reach a gRPC producer whose Telemetry stream ends in a stateless functions
// process, so it keeps the check in its long-poll queue (runtime/core/transaction_channels.ts).
// The relay takes them from there, as an HTTP producer would: while a front end has a
// channel registered for producer group G, one loop long-polls G's checks across every
// broker group (the router's pollTransactionChecks) and sends each to one of G's channels,
// in turn. An answer in reply ends the transaction (fromCheck); one that comes later comes as
// EndTransaction with the wrapped id the check carried. A check no channel takes is left
// unanswered: the broker asks again after its check interval, as RocketMQ's does.
import type {
  TransactionApi,
  TransactionCheckChannel,
  TransactionCheckHost,
} from "../protocol/core_api.ts";
import type { TransactionCheck } from "../protocol/transaction_types.ts";

export interface CheckRelayOptions {
  /** Longest wait of one poll (clusterCheckRelayWaitMs). */
  waitMs: number;
  /** Most checks taken by one poll (clusterCheckRelayMax). */
  max: number;
  /** Pause after a failed poll (clusterCheckRelayRetryMs). */
  retryMs: number;
  log: (line: string) => void;
}

type Core = Pick<TransactionApi, "pollTransactionChecks" | "endTransaction">;

interface Relayed {
  channels: TransactionCheckChannel[];
  stop: AbortController;
  loop: Promise<void>;
}

export class TransactionCheckRelay implements TransactionCheckHost {
  readonly #groups = new Map<string, Relayed>();

  constructor(private readonly core: Core, private readonly o: CheckRelayOptions) {}

  registerTransactionCheckChannel(group: string, channel: TransactionCheckChannel): () => void {
    let relayed = this.#groups.get(group);
    if (relayed === undefined) {
      const stop = new AbortController();
      relayed = { channels: [], stop, loop: Promise.resolve() };
      this.#groups.set(group, relayed);
      relayed.loop = this.#run(group, relayed);
    }
    relayed.channels.push(channel);
    const mine = relayed;
    return () => {
      mine.channels = mine.channels.filter((c) => c !== channel);
      if (mine.channels.length > 0 || this.#groups.get(group) !== mine) return;
      this.#groups.delete(group);
      mine.stop.abort();
    };
  }

  /** Producer groups relayed now (tests, metrics). */
  get groups(): string[] {
    return [...this.#groups.keys()].sort();
  }

  /** Stops every loop and waits for them. */
  async close(): Promise<void> {
    const all = [...this.#groups.values()];
    this.#groups.clear();
    for (const r of all) r.stop.abort();
    await Promise.all(all.map((r) => r.loop));
  }

  async #run(group: string, relayed: Relayed): Promise<void> {
    const signal = relayed.stop.signal;
    while (!signal.aborted) {
      let checks: TransactionCheck[];
      try {
        checks = await this.core.pollTransactionChecks(
          group,
          { max: this.o.max, waitMs: this.o.waitMs },
          signal,
        );
      } catch (err) {
        if (signal.aborted) return;
        this.o.log(`transaction check relay: polling ${group} failed: ${String(err)}`);
        await pause(this.o.retryMs, signal);
        continue;
      }
      for (const check of checks) await this.#deliver(relayed, check);
    }
  }

  /** To the next channel that takes it (rotating, so checks spread over producers). */
  async #deliver(relayed: Relayed, check: TransactionCheck): Promise<void> {
    const channels = relayed.channels;
    for (let i = 0; i < channels.length; i++) {
      const channel = channels[(i + (check.check % channels.length)) % channels.length];
      let answer;
      try {
        answer = await channel.send(check);
      } catch {
        continue; // that producer's connection is gone: the next one
      }
      if (answer === "COMMIT" || answer === "ROLLBACK") {
        await this.core.endTransaction(check.transactionId, answer, { fromCheck: true }).catch(
          (err) => this.o.log(`transaction check relay: ending ${check.transactionId}: ${err}`),
        );
      }
      return;
    }
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
