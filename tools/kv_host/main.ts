// Runs a KV Connect host as its own process, for local multi-process clusters and tests:
//
//   deno run -A tools/kv_host/main.ts --port 4510 --token X
//   bun run tools/kv_host/main.ts --port 4510 --token X
//
// Once listening it prints one JSON line on stdout, {"url":"http://127.0.0.1:4510"}; point
// clients at that URL with the same token (Deno: DENO_KV_ACCESS_TOKEN in the client's
// environment; @deno/kv: the accessToken option). SIGTERM or SIGINT closes it: it prints
// {"stopped":true} and exits 0.
//
// Options: --port (default 0: a free port), --hostname (default 127.0.0.1), --token
// (default $DENO_KV_ACCESS_TOKEN; a token on the command line shows in `ps`), --database-id
// (keep it across restarts so clients' cached metadata stays valid), --expiry-lag-ms.
import process from "node:process";
import { parseArgs } from "node:util";
import { pickPlatform } from "../../runtime/platform/pick.ts";
import { startKvHost } from "./kv_connect_host.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    port: { type: "string", default: "0" },
    hostname: { type: "string", default: "127.0.0.1" },
    token: { type: "string" },
    "database-id": { type: "string" },
    "expiry-lag-ms": { type: "string", default: "0" },
  },
  strict: true,
});

const token = values.token ?? process.env.DENO_KV_ACCESS_TOKEN;
if (!token) fail("Cannot start: pass --token or set DENO_KV_ACCESS_TOKEN");
const port = integer("--port", values.port, 65535);
const expiryLagMs = integer("--expiry-lag-ms", values["expiry-lag-ms"], 2 ** 31);

const host = await startKvHost({
  serve: (await pickPlatform()).serve,
  token,
  port,
  hostname: values.hostname,
  databaseId: values["database-id"],
  expiryLagMs,
});
console.log(JSON.stringify({ url: host.url, databaseId: host.databaseId }));

let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    await host.close();
    console.log(JSON.stringify({ stopped: true }));
    process.exit(0);
  });
}

function integer(flag: string, text: string, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > max) {
    fail(`Cannot start: ${flag} must be an integer in 0..${max}, found ${text}`);
  }
  return n;
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}
