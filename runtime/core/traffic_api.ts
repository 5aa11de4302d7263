// Counts what flows through the core API into TrafficCounters: messages and body bytes
// produced (on success) and consumed (pulled or received), per topic.
import type { BrokerClient, RecordApi } from "../protocol/core_api.ts";
import type { WireMessage } from "../protocol/types.ts";
import type { PopCounters } from "./broker_metrics.ts";
import { bodyBytes, type TrafficCounters } from "./traffic.ts";

/** `api` with produce, produceBatch, pull, pullRecords (remoting) and receive counted into
 * `traffic`, and POP's receive, ack and nack into `pop`. */
export function countTraffic<Api extends BrokerClient & RecordApi>(
  api: Api,
  traffic: TrafficCounters,
  pop: PopCounters,
): Api {
  const consumed = (messages: readonly WireMessage[]) => {
    for (const m of messages) traffic.consumed(m.topic, 1, bodyBytes(m.body, m.bodyEncoding));
  };
  return {
    ...api,
    // A reaction, not an async frame: the hottest call (bench/README.md, issue #27 round 3).
    produce: (topic, message) =>
      api.produce(topic, message).then((result) => {
        traffic.produced(topic, 1, message.body.byteLength);
        return result;
      }),
    produceBatch: async (topic, messages) => {
      const results = await api.produceBatch(topic, messages);
      let n = 0, bytes = 0;
      results.forEach((r, i) => {
        if (!r.ok) return;
        n++;
        bytes += messages[i]?.body.byteLength ?? 0;
      });
      if (n > 0) traffic.produced(topic, n, bytes);
      return results;
    },
    pull: async (topic, queueId, request, signal) => {
      const result = await api.pull(topic, queueId, request, signal);
      consumed(result.messages);
      return result;
    },
    pullRecords: async (topic, queueId, request, signal) => {
      const result = await api.pullRecords(topic, queueId, request, signal);
      if (result.records.length > 0) {
        traffic.consumed(topic, result.records.length, result.bodyBytes);
      }
      return result;
    },
    receive: async (group, options, signal) => {
      const messages = await api.receive(group, options, signal);
      consumed(messages);
      pop.received += messages.length;
      return messages;
    },
    ack: async (group, handle) => {
      await api.ack(group, handle);
      pop.acked++;
    },
    ackBatch: async (group, handles) => {
      const results = await api.ackBatch(group, handles);
      pop.acked += results.filter((r) => r.ok).length;
      return results;
    },
    nack: async (group, handle, delayMs) => {
      await api.nack(group, handle, delayMs);
      pop.nacked++;
    },
  };
}
