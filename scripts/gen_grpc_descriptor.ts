// Writes functions/grpc/messaging_descriptor.json from the rocketmq-client-nodejs package's
// .proto files (functions/grpc/descriptor_source.ts):
//   deno run -A scripts/gen_grpc_descriptor.ts
// functions/grpc/descriptor_test.ts fails while the committed file is stale.
import { messagingDescriptor } from "../functions/grpc/descriptor_source.ts";

const path = new URL("../functions/grpc/messaging_descriptor.json", import.meta.url);
await Deno.writeTextFile(path, JSON.stringify(messagingDescriptor(), null, 2) + "\n");
console.log(`wrote ${path.pathname}`);
