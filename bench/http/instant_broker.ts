// A broker whose produce costs nothing: it answers at once with a made-up result, so a
// bench sees what the HTTP layer in front of it costs (stub_broker_server.ts,
// produce_alloc_bench.ts's stub phase; bench/README.md "Produce path").
import type { ProduceMessage, ProduceResult } from "../../runtime/protocol/types.ts";

export function instantBroker() {
  let n = 0;
  return {
    produce: (topic: string, m: ProduceMessage): Promise<ProduceResult> => {
      n++;
      return Promise.resolve({
        messageId: "7F00000100002A9F0000000000" + (n & 0xffffff).toString(16).padStart(6, "0"),
        topic,
        queueId: n & 7,
        queueOffset: n,
        commitLogOffset: n * (m.body.length + 180),
        storeTimestamp: Date.now(),
        durability: "WRITTEN",
      });
    },
  };
}
