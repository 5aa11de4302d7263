// Health and Prometheus metrics: read-only views of the store, holds, topics and timers.
import type { MessageStore } from "../../storage/message_store.ts";
import type { HealthInfo, ScheduledStats } from "../protocol/types.ts";
import type { PullHoldService } from "../long_polling.ts";
import type { ScheduleService } from "../schedule_service.ts";
import type { TimerService } from "../timer_service.ts";
import type { TopicRegistry } from "./topic_registry.ts";

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

  /** Prometheus text exposition of the broker's gauges. */
  metrics(): string {
    const { store } = this.d;
    const stored = store.stats();
    const s = this.scheduledStats();
    const lines = [
      "# TYPE mq_commitlog_max_offset gauge",
      `mq_commitlog_max_offset ${stored.wroteOffset}`,
      "# TYPE mq_commitlog_flushed_offset gauge",
      `mq_commitlog_flushed_offset ${stored.flushedOffset}`,
      "# TYPE mq_held_pulls gauge",
      `mq_held_pulls ${this.d.holds.held}`,
      "# TYPE mq_store_writable gauge",
      `mq_store_writable ${stored.writable ? 1 : 0}`,
      "# TYPE mq_store_writable_changes_total counter",
      `mq_store_writable_changes_total ${stored.writableChanges}`,
      "# TYPE mq_store_corrupt_reads_total counter",
      `mq_store_corrupt_reads_total ${stored.corruptReads}`,
      "# TYPE mq_topics gauge",
      `mq_topics ${this.d.topics.size}`,
      "# TYPE mq_timers_pending gauge",
      `mq_timers_pending ${s.timersPending}`,
      "# TYPE mq_timers_delivered_total counter",
      `mq_timers_delivered_total ${s.timersDelivered}`,
      "# TYPE mq_timer_lateness_ms gauge",
      `mq_timer_lateness_ms{quantile="0.5"} ${s.timerLateP50Ms}`,
      `mq_timer_lateness_ms{quantile="0.99"} ${s.timerLateP99Ms}`,
      "# TYPE mq_delay_level_pending gauge",
      ...s.delayLevelPending.map((n, i) => `mq_delay_level_pending{level="${i + 1}"} ${n}`),
    ];
    const tx = this.d.transactions?.();
    if (tx !== undefined) {
      lines.push(
        "# TYPE mq_transactions_pending gauge",
        `mq_transactions_pending ${tx.pending}`,
        "# TYPE mq_transaction_checks_total counter",
        `mq_transaction_checks_total ${tx.checksSent}`,
        "# TYPE mq_transactions_discarded_total counter",
        `mq_transactions_discarded_total ${tx.discarded}`,
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
