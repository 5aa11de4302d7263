// The broker link over HTTPS (issue #26 item 6): sequential keep-alive requests with a 1 KiB
// body, as the functions send produces, over plain HTTP (the baseline, same run) and over
// HTTPS through platform.fetchTrusting(ca), to servers of this runtime's platform.serve on
// loopback. On Bun it also times the `tls.ca` shapes fetchTrusting chose between
// (runtime/platform/bun_fetch.ts).
//   deno run -A bench/http/tls_link_bench.ts [--json] [--requests 1000] [--rounds 7]
//   bun run bench/http/tls_link_bench.ts     [--json] [--requests 1000] [--rounds 7]
import process from "node:process";
import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { makeTestPki, pkiUnavailable } from "../../tests/harness/tls.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const at = args.indexOf("--requests");
const requests = at >= 0 ? Number(args[at + 1]) : 1000;
const roundsAt = args.indexOf("--rounds");
const rounds = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 7;
const missing = pkiUnavailable();
if (missing) {
  console.log(`tls_link_bench: skipped, ${missing}`);
  process.exit(0);
}

const platform = await pickPlatform();
using pki = makeTestPki();
const caPem = readFileSync(pki.caFile, "utf8");
const tls = { cert: readFileSync(pki.certFile, "utf8"), key: readFileSync(pki.keyFile, "utf8") };
const answer = () => new Response('{"ok":true}');
const base = { hostname: "127.0.0.1", port: 0, maxRequestBodyBytes: 1 << 20 };
const plain = await platform.serve(base, answer);
const secure = await platform.serve({ ...base, tls }, answer);
const body = "x".repeat(1024);

/** Requests per second, after a warm-up of a tenth as many. */
async function rate(f: typeof fetch, url: string): Promise<number> {
  const one = async () => await (await f(url, { method: "POST", body })).text();
  for (let i = 0; i < requests / 10; i++) await one();
  const started = performance.now();
  for (let i = 0; i < requests; i++) await one();
  return Math.round(requests / ((performance.now() - started) / 1000));
}

const withTls = (ca: string | string[]): typeof fetch => (input, init) => {
  const options: RequestInit & { tls: { ca: string | string[] } } = { ...init, tls: { ca } };
  return fetch(input, options);
};
const trusting = platform.fetchTrusting(caPem);
const httpsUrl = `https://127.0.0.1:${secure.port}/`;
// Variants are interleaved round by round and reported as medians: on a shared machine the
// load changes within seconds, and a variant measured after another would carry the change.
const variants: [string, typeof fetch, string][] = [
  ["http", fetch, `http://127.0.0.1:${plain.port}/`],
  ["https", trusting, httpsUrl],
];
if (platform.name === "bun") {
  // fetchTrusting sends the CA alone (bun_fetch.ts); these are its fallback (the roots and
  // the CA as one string) and the list shape it replaced.
  variants.push(["bun_roots_string", withTls([...rootCertificates, caPem].join("\n")), httpsUrl]);
  variants.push(["bun_roots_list", withTls([...rootCertificates, caPem]), httpsUrl]);
}
const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, f, url] of variants) samples.get(name)!.push(await rate(f, url));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const result: Record<string, unknown> = {
  bench: "tls_link",
  runtime: platform.name,
  requests,
  rounds,
};
const http = median(samples.get("http")!);
for (const [name] of variants) {
  const rps = median(samples.get(name)!);
  result[`${name}_rps`] = rps;
  if (name !== "http") result[`${name}_ratio`] = +(rps / http).toFixed(3);
}
trusting.close();
await plain.close({ force: true });
await secure.close({ force: true });
if (json) console.log(JSON.stringify(result));
else console.log(result);
process.exit(0);
