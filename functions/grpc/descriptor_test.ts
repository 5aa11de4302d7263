// messaging_descriptor.json must be what the package's .proto files give today: regenerate
// with `deno run -A scripts/gen_grpc_descriptor.ts` when this fails (a package upgrade).
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { messagingDescriptor } from "./descriptor_source.ts";
import { loadMessagingService, rpcNames } from "./proto.ts";

Deno.test("the committed gRPC descriptor matches the package's .proto files", () => {
  const committed = JSON.parse(
    readFileSync(new URL("./messaging_descriptor.json", import.meta.url), "utf8"),
  );
  assert.deepEqual(committed, messagingDescriptor(), "stale: run scripts/gen_grpc_descriptor.ts");
});

Deno.test("the service loaded from it encodes as the .proto files say", () => {
  const service = loadMessagingService();
  assert.ok(rpcNames(service).includes("SendMessage"));
  assert.equal(service.SendMessage.path, "/apache.rocketmq.v2.MessagingService/SendMessage");
  const request = {
    messages: [{
      topic: { name: "T" },
      systemProperties: { messageId: "M", deliveryTimestamp: { seconds: 2, nanos: 3 } },
      body: Buffer.from("b"),
    }],
  };
  const bytes = service.SendMessage.requestSerialize(request);
  const back = service.SendMessage.requestDeserialize(bytes) as typeof request;
  assert.equal(back.messages[0].systemProperties.messageId, "M");
  assert.deepEqual(back.messages[0].systemProperties.deliveryTimestamp, { seconds: 2, nanos: 3 });
  assert.equal(Buffer.from(back.messages[0].body).toString(), "b");
});
