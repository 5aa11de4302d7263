// The broker's operations figures as Prometheus families: traffic per topic, lag per group
// and topic, DLQ sizes, store and disk use, webhook deliveries per subscription, POP
// counters. Appended to Observability's store and timer families by Broker.metrics().
import type { MessageStore } from "../../storage/message_store.ts";
import type { DeliveryLog } from "../webhook/delivery_log.ts";
import { family, histogram, type Sample } from "../protocol/prom_text.ts";
import type { OpsViews } from "./ops_views.ts";
import type { TrafficCounters } from "./traffic.ts";

export interface BrokerMetricsDeps {
  store: MessageStore;
  traffic: TrafficCounters;
  views: OpsViews;
  deliveries: DeliveryLog;
  /** Percent of the data disk in use. */
  diskUsedRatio?: () => number;
  pop: PopCounters;
  /** POP messages received and not yet acked, nacked or revived. */
  popInFlight: () => number;
}

/** POP calls counted by the core API (traffic_api.ts). */
export interface PopCounters {
  received: number;
  acked: number;
  nacked: number;
}

export async function brokerMetrics(d: BrokerMetricsDeps): Promise<string[]> {
  const traffic = [...d.traffic.entries()];
  const per = (f: (t: (typeof traffic)[number][1]) => number): Sample[] =>
    traffic.map(([topic, t]) => [{ topic }, f(t)]);
  const lag: Sample[] = [];
  const dlq: Sample[] = [];
  for (const g of await d.views.listGroups()) {
    const progress = await d.views.groupProgress(g.group).catch(() => undefined);
    if (!progress) continue;
    for (const t of progress.topics) lag.push([{ group: g.group, topic: t.topic }, t.totalLag]);
    dlq.push([{ group: g.group }, progress.dlqMessages]);
  }
  const stats = d.store.stats();
  const webhooks = [...d.deliveries.totals];
  const hook = (f: (t: (typeof webhooks)[number][1]) => number): Sample[] =>
    webhooks.map(([subscription, t]) => [{ subscription }, f(t)]);
  const flushes = d.store.flushDurations();
  return [
    ...histogram(
      "mq_flush_duration_seconds",
      "Duration of each CommitLog flush (the fdatasyncs of one group commit)",
      flushes.boundsMs.map((ms) => ms / 1000),
      flushes.counts,
      flushes.sumMs / 1000,
    ),
    ...family(
      "mq_messages_produced_total",
      "counter",
      "Messages produced per topic since start",
      per((t) => t.producedMessages),
    ),
    ...family(
      "mq_bytes_produced_total",
      "counter",
      "Body bytes produced per topic since start",
      per((t) => t.producedBytes),
    ),
    ...family(
      "mq_messages_consumed_total",
      "counter",
      "Messages pulled or received per topic since start",
      per((t) => t.consumedMessages),
    ),
    ...family(
      "mq_bytes_consumed_total",
      "counter",
      "Body bytes pulled or received per topic since start",
      per((t) => t.consumedBytes),
    ),
    ...family(
      "mq_consumer_lag_messages",
      "gauge",
      "Messages a group has yet to consume, per topic",
      lag,
    ),
    ...family("mq_dlq_messages", "gauge", "Dead letters a group holds", dlq),
    ...family(
      "mq_store_bytes",
      "gauge",
      "CommitLog bytes kept on disk",
      stats.wroteOffset - stats.minPhysicalOffset,
    ),
    ...family("mq_store_segments", "gauge", "CommitLog segment files", stats.segments),
    ...family(
      "mq_disk_used_ratio",
      "gauge",
      "Fraction of the data disk in use (0-1)",
      (d.diskUsedRatio?.() ?? 0) / 100,
    ),
    ...family(
      "mq_webhook_attempts_total",
      "counter",
      "Webhook delivery attempts per subscription",
      hook((t) => t.attempts),
    ),
    ...family(
      "mq_webhook_failures_total",
      "counter",
      "Webhook attempts not delivered per subscription",
      hook((t) => t.failures),
    ),
    ...family(
      "mq_webhook_latency_seconds_total",
      "counter",
      "Sum of webhook attempt latencies per subscription",
      hook((t) => t.latencySumMs / 1000),
    ),
    ...family(
      "mq_pop_received_total",
      "counter",
      "Messages handed out by POP receive",
      d.pop.received,
    ),
    ...family("mq_pop_acked_total", "counter", "POP messages acked", d.pop.acked),
    ...family("mq_pop_nacked_total", "counter", "POP messages nacked", d.pop.nacked),
    ...family(
      "mq_pop_inflight_messages",
      "gauge",
      "POP messages received and not yet acked, nacked or come back (in memory)",
      d.popInFlight(),
    ),
  ];
}
