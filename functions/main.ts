// The functions as their own process (split mode), on Deno or Bun:
//   MQ_KV=http://kv-host:4510 DENO_KV_ACCESS_TOKEN=… MQ_BROKER_TOKEN=… PORT=8080 \
//     deno run -A functions/main.ts        (or: bun run functions/main.ts)
// It reads the brokers' route table in the coordination store (a KV Connect URL or
// etcd://, since a local KV file cannot be shared between processes) and serves the API
// over them (functions/split.ts). Like runtime/main.ts it is an entry file: the only place
// here that reads the environment and picks the platform.
import process from "node:process";
import { pickPlatform } from "../runtime/platform/pick.ts";

const platform = await pickPlatform();
const kvUrl = process.env.MQ_KV || "";
if (!kvUrl) {
  process.stderr.write("MQ_KV must name the KV Connect endpoint the brokers register in\n");
  process.exit(2);
}
// Opened before the rest of the process loads: a KV Connect client's first request waits
// ~40 ms after it connects (its Nagle and the host's delayed ACK), so the connection must
// start while the app loads, not after (bench/README.md, "Round 7 … functions cold start").
const kv = platform.openKv(kvUrl, { accessToken: process.env.DENO_KV_ACCESS_TOKEN || "" });
kv.catch(() => {}); // awaited, and thrown, by the split process once it is loaded
const { startSplitFunctions } = await import("./split.ts");
await startSplitFunctions({ platform, env: process.env, kvUrl, kv });
