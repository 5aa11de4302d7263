// Child process for kv_connect_host_test.ts: opens a KV Connect URL with the platform's
// openKv (Bun: @deno/kv; Deno: Deno.openKv), optionally writes one key, optionally reads
// one key, prints one JSON line and exits.
//
//   bun run tests/support/kv_interop_child.ts <url> '<write key JSON>' <value hex> '<read key JSON>'
//
// A key argument of "-" skips that part. The token comes from DENO_KV_ACCESS_TOKEN, which
// both runtimes read from the environment the parent gives the child.
import { Buffer } from "node:buffer";
import process from "node:process";
import type { KvKey } from "../../runtime/platform/kv_port.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";

const [url, writeKeyJson, writeValueHex, readKeyJson] = process.argv.slice(2);
const platform = await pickPlatform();
const runtime = platform.name;
const kv = await platform.openKv(url, { accessToken: process.env.DENO_KV_ACCESS_TOKEN });
try {
  let wrote: string | null = null;
  if (writeKeyJson !== "-") {
    const key = JSON.parse(writeKeyJson) as KvKey;
    wrote = (await kv.set(key, Buffer.from(writeValueHex, "hex"))).versionstamp;
  }
  let read: { valueHex: string; versionstamp: string } | null = null;
  if (readKeyJson !== "-") {
    const entry = await kv.get(JSON.parse(readKeyJson) as KvKey);
    if (entry) {
      read = {
        valueHex: Buffer.from(entry.value).toString("hex"),
        versionstamp: entry.versionstamp,
      };
    }
  }
  console.log(JSON.stringify({ runtime, wrote, read }));
} finally {
  kv.close();
}
