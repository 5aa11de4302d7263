// One delivered 1 KiB message to the bytes of a ReceiveMessageResponse, the two ways:
// toDeliveredMessage + proto-loader's serializer (object, fromObject, encode) and
// encodeDelivered (functions/grpc/delivered_wire.ts). Same bytes (delivered_wire_test.ts).
//   bun run bench/grpc/encode_bench.ts      deno run -A bench/grpc/encode_bench.ts
// Rounds of 50 000 alternate; prints the medians (µs per message) and their ratio.
import type * as grpc from "@grpc/grpc-js";
import { loadMessagingService } from "../../functions/grpc/proto.ts";
import { toDeliveredMessage } from "../../functions/grpc/message.ts";
import { encodeDelivered } from "../../functions/grpc/delivered_wire.ts";
import { Names } from "../../functions/grpc/resources.ts";
import type { PopMessage } from "../../runtime/protocol/types.ts";
import { median, round, runtimeInfo } from "../support.ts";

const receive = Object.values(loadMessagingService()).find((d) =>
  d.originalName === "receiveMessage"
) as grpc.MethodDefinition<unknown, unknown>;
const names = new Names();
const m: PopMessage = {
  topic: "orders",
  body: "x".repeat(1024),
  bodyEncoding: "utf8",
  properties: { region: "eu" },
  messageId: "0A0B0C0D0E0F00000000000000000001",
  bornTimestamp: Date.now(),
  storeTimestamp: Date.now(),
  queueId: 1,
  queueOffset: 12345,
  commitLogOffset: 0,
  reconsumeTimes: 0,
  receiptHandle: "h".repeat(90),
  invisibleUntil: 0,
  tag: "t",
};
const ways: [string, () => unknown][] = [
  ["object", () => receive.responseSerialize({ message: toDeliveredMessage(m, names, "", "h:1") })],
  ["direct", () => receive.responseSerialize(encodeDelivered(m, names, "", "h:1"))],
];
const us: Record<string, number[]> = { object: [], direct: [] };
for (let round = 0; round < 12; round++) {
  for (const [name, f] of ways) {
    const n = 50_000;
    const t = performance.now();
    for (let i = 0; i < n; i++) f();
    if (round >= 2) us[name].push((performance.now() - t) * 1000 / n); // 2 warm-up rounds
  }
}
const object = median(us.object), direct = median(us.direct);
console.log(JSON.stringify({
  bench: "grpc_encode",
  runtime: `${runtimeInfo().name} ${runtimeInfo().version}`,
  object_us_per_msg: round(object),
  direct_us_per_msg: round(direct),
  direct_vs_object_ratio: round(direct / object),
}));
