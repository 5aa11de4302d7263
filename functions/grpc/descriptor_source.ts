// The RocketMQ 5 service definitions as a protobufjs JSON descriptor, parsed from the .proto
// files that come with the rocketmq-client-nodejs package (a runtime dependency: the .proto
// text is not copied here). scripts/gen_grpc_descriptor.ts writes the result to
// messaging_descriptor.json, which proto.ts loads at start (parsing the .proto files took
// 30–66 ms of the cold start: bench/README.md, "startup_bench"); descriptor_test.ts fails
// while that file differs from what the package's .proto files give.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The parse options: camelCase field names, as proto.ts's loader options expect. */
const PARSE = { keepCase: false };

export function messagingDescriptor(): Record<string, unknown> {
  const require = createRequire(import.meta.url);
  const root = join(dirname(require.resolve("rocketmq-client-nodejs/package.json")), "proto");
  // proto-loader's own loader (its include-path resolver and the well-known types), so the
  // tree is the one protoLoader.loadSync builds.
  const loaderDir = dirname(require.resolve("@grpc/proto-loader"));
  const util = require(join(loaderDir, "util.js")) as {
    loadProtosWithOptionsSync(
      file: string,
      options: { includeDirs: string[]; keepCase: boolean },
    ): { toJSON(): Record<string, unknown> };
  };
  return util.loadProtosWithOptionsSync("apache/rocketmq/v2/service.proto", {
    includeDirs: [root],
    ...PARSE,
  }).toJSON();
}
