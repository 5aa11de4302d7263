// Child process for kv_connect_host_test.ts: opens a KV Connect URL with runtime/kv's
// openKv (Bun: @deno/kv; Deno: Deno.openKv), optionally writes one key, optionally reads
// one key, prints one JSON line and exits.
//
//   bun run tests/support/kv_interop_child.ts <url> '<write key JSON>' <value hex> '<read key JSON>'
//
// A key argument of "-" skips that part. The token comes from DENO_KV_ACCESS_TOKEN, which
// both runtimes read from the environment the parent gives the child.
import { Buffer } from "node:buffer";
import process from "node:process";
import { type KvKey, openKv } from "../../runtime/kv/kv_port.ts";

const [url, writeKeyJson, writeValueHex, readKeyJson] = process.argv.slice(2);
const runtime = typeof (globalThis as { Bun?: unknown }).Bun === "undefined" ? "deno" : "bun";
const kv = await openKv(url, { accessToken: process.env.DENO_KV_ACCESS_TOKEN });
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
