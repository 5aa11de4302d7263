// Health and Prometheus metrics: read-only views of the store, holds, topics and timers.
import type { MessageStore } from "../../storage/message_store.ts";
import type { HealthInfo, ScheduledStats } from "../protocol/types.ts";
import type { PullHoldService } from "../long_polling.ts";
import type { ScheduleService } from "../schedule_service.ts";
import type { TimerService } from "../timer_service.ts";
import type { TopicRegistry } from "./topic_registry.ts";
import { family, summary } from "../protocol/prom_text.ts";

export interface ObservabilityDeps {
  store: MessageStore;
  holds: PullHoldService;
  topics: TopicRegistry;
  timers: TimerService;
  schedule: ScheduleService;
  brokerName: string;
  flushDiskType: string;
  runtime: string;
  /** Undecided transactions, checks sent and transactions discarded (transaction_service.ts). */
  transactions?: () => { pending: number; checksSent: number; discarded: number };
}

export class Observability {
  constructor(private readonly d: ObservabilityDeps) {}

  health(): Promise<HealthInfo> {
    const { store } = this.d;
    const status: HealthInfo["status"] = store.writable ? "ok" : "degraded";
    return Promise.resolve({
      status,
      brokerName: this.d.brokerName,
      writable: store.writable,
      flushDiskType: this.d.flushDiskType,
      commitLogMaxOffset: store.maxPhysicalOffset,
      runtime: this.d.runtime,
      scheduled: this.scheduledStats(),
    });
  }

  /** Pending counts and recent lateness of delayed and timed messages. */
  scheduledStats(): ScheduledStats {
    const { timers, schedule } = this.d;
    return {
      timersPending: timers.pending,
      timersDelivered: timers.delivered,
      timerLateP50Ms: quantile(timers.lateness, 0.5),
      timerLateP99Ms: quantile(timers.lateness, 0.99),
      delayLevelPending: schedule.pending(),
      delayLevelLateP99Ms: quantile(schedule.lateness, 0.99),
    };
  }

  /** Prometheus text exposition of the broker's gauges (each family with HELP and TYPE). */
  metrics(): string {
    const { store } = this.d;
    const stored = store.stats();
    const s = this.scheduledStats();
    const lines = [
      ...family(
        "mq_commitlog_max_offset",
        "gauge",
        "End of the written CommitLog (bytes)",
        stored.wroteOffset,
      ),
      ...family(
        "mq_commitlog_flushed_offset",
        "gauge",
        "CommitLog bytes fdatasync'ed",
        stored.flushedOffset,
      ),
      ...family("mq_held_pulls", "gauge", "Long polls waiting for messages", this.d.holds.held),
      ...family(
        "mq_store_writable",
        "gauge",
        "1 when the store takes writes",
        stored.writable ? 1 : 0,
      ),
      ...family(
        "mq_store_writable_changes_total",
        "counter",
        "Times the store stopped or resumed taking writes",
        stored.writableChanges,
      ),
      ...family(
        "mq_store_corrupt_reads_total",
        "counter",
        "Reads that met a damaged record",
        stored.corruptReads,
      ),
      ...family("mq_topics", "gauge", "Client topics", this.d.topics.size),
      ...family(
        "mq_timers_pending",
        "gauge",
        "Timed messages waiting in the timer wheel",
        s.timersPending,
      ),
      ...family(
        "mq_timers_delivered_total",
        "counter",
        "Timed messages delivered",
        s.timersDelivered,
      ),
      ...summary(
        "mq_timer_lateness_seconds",
        "Lateness of recent timed deliveries",
        this.d.timers.lateness.map((ms) => ms / 1000),
      ),
      ...summary(
        "mq_delay_level_lateness_seconds",
        "Lateness of recent delay-level deliveries",
        this.d.schedule.lateness.map((ms) => ms / 1000),
      ),
      ...family(
        "mq_delay_level_pending",
        "gauge",
        "Messages waiting per delay level",
        s.delayLevelPending.map((n, i) => [{ level: i + 1 }, n]),
      ),
    ];
    const tx = this.d.transactions?.();
    if (tx !== undefined) {
      lines.push(
        ...family(
          "mq_transactions_pending",
          "gauge",
          "Transactions not decided yet (in memory)",
          tx.pending,
        ),
        ...family(
          "mq_transaction_checks_total",
          "counter",
          "Transaction checks sent to producers",
          tx.checksSent,
        ),
        ...family(
          "mq_transactions_discarded_total",
          "counter",
          "Transactions discarded after transactionCheckMax checks",
          tx.discarded,
        ),
      );
    }
    return lines.join("\n") + "\n";
  }
}

/** The q-quantile of recent samples (0 when there are none). */
function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}
