// Remoting vs HTTP benchmark. Same file on Deno and Bun:
//   deno run -A bench/remoting/remoting_bench.ts [--json] [--seconds 5] [--rounds 3]
//   bun run bench/remoting/remoting_bench.ts     [--json] [--seconds 5] [--rounds 3]
// Starts the broker (ASYNC_FLUSH, fresh temp folder) as a child on the runtime it runs on,
// then drives it from Node.js processes, 64 connections, 1 KiB bodies:
//   http_produce_msgs_per_s        single produces over HTTP/1.1 keep-alive (autocannon)
//   remoting_send_msgs_per_s       SEND_MESSAGE_V2 over kept-open TCP (remoting_load.mjs)
//   remoting_vs_http_produce_ratio the median of --rounds alternating rounds' ratios
//   remoting_pull_msgs_per_s       PULL_MESSAGE, 32 per pull, raw records (remoting_load.mjs)
//   http_pull_msgs_per_s           GET .../messages?max=32, JSON pages (remoting_load.mjs)
// The load shares the 2 cores with the broker: quote the ratios (bench/README.md).
import process from "node:process";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { MqClient } from "../../client/mod.ts";
import { cpuTimes, median, stealShare, stealText } from "../support.ts";
import { startBroker } from "../broker_process.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const seconds = Number(args[args.indexOf("--seconds") + 1] ?? 0) || 5;
const rounds = Number(args[args.indexOf("--rounds") + 1] ?? 0) || 3;
const CONNECTIONS = 64;
const BODY_BYTES = 1024;
const QUEUES = 8;
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const runtime = g.Deno ? `deno ${g.Deno.version.deno}` : `bun ${g.Bun.version}`;
const say = (line: string) => process.stderr.write(line + "\n");
const here = (p: string) => new URL(p, import.meta.url).pathname;

function node(argv: string[]): Promise<string> {
  const child = spawn("node", argv, { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => out += c);
    child.on(
      "close",
      (code) => code === 0 ? resolve(out) : reject(new Error(`node exited ${code}`)),
    );
  });
}

/** Messages/s of one remoting_load.mjs run; any error answer fails the bench. */
async function load(mode: string, ...a: (string | number)[]): Promise<number> {
  const r = JSON.parse(await node([here("./remoting_load.mjs"), mode, ...a.map(String)]));
  if (r.errors > 0) throw new Error(`${mode}: ${r.errors} error answers`);
  return r.msgs / r.seconds;
}

/** Requests/s autocannon reaches (POST of `bodyFile`), refusing any non-2xx. */
async function autocannon(url: string, bodyFile: string, durationS: number): Promise<number> {
  const cli = here("../../node_modules/autocannon/autocannon.js");
  const out = await node([
    cli,
    "-c",
    String(CONNECTIONS),
    "-d",
    String(durationS),
    "-m",
    "POST",
    "-i",
    bodyFile,
    "-j",
    url,
  ]);
  const r = JSON.parse(out);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`autocannon: ${r.non2xx} non-2xx`);
  return r.requests.average;
}

const dataDir = mkdtempSync(`${tmpdir()}/mq-remoting-bench-`);
say(
  `remoting bench on ${runtime}: ${CONNECTIONS} connections, ${BODY_BYTES} B bodies, ${rounds} rounds of ${seconds} s`,
);
const broker = await startBroker(dataDir);
const remotingAddress = String(broker.listening.remoting);
try {
  const mq = new MqClient({ baseUrl: broker.url });
  await mq.upsertTopic("bench", { readQueueNums: QUEUES, writeQueueNums: QUEUES });
  const bodyFile = `${dataDir}/body-1k`;
  writeFileSync(bodyFile, new Uint8Array(BODY_BYTES).fill(120));
  const path = "/v1/topics/bench/messages";
  say("warming up…");
  await autocannon(broker.url + path, bodyFile, 1);
  await load("send", remotingAddress, "bench", 16, 1, BODY_BYTES);
  const httpRates: number[] = [], remotingRates: number[] = [], ratios: number[] = [];
  const phase = cpuTimes();
  for (let round = 1; round <= rounds; round++) {
    const start = cpuTimes();
    const h = await autocannon(broker.url + path, bodyFile, seconds);
    const r = await load("send", remotingAddress, "bench", CONNECTIONS, seconds, BODY_BYTES);
    httpRates.push(h);
    remotingRates.push(r);
    ratios.push(r / h);
    say(
      `  round ${round}/${rounds}: HTTP produce ${h.toFixed(0)} msgs/s, remoting send ${
        r.toFixed(0)
      } msgs/s, ratio ${(r / h).toFixed(3)}${stealText(stealShare(start))}`,
    );
  }
  const produceSteal = stealShare(phase);
  say("pulls: remoting (raw records) then HTTP (JSON pages), 32 per pull…");
  const remotingPull = await load("pull", remotingAddress, "bench", QUEUES, CONNECTIONS, seconds);
  const httpPull = await load("http-pull", broker.url, "bench", QUEUES, CONNECTIONS, seconds);
  say(`  remoting pull ${remotingPull.toFixed(0)} msgs/s, HTTP pull ${httpPull.toFixed(0)} msgs/s`);
  const result = {
    bench: "remoting",
    runtime,
    connections: CONNECTIONS,
    body_bytes: BODY_BYTES,
    seconds,
    rounds,
    http_produce_msgs_per_s: Math.round(median(httpRates)),
    remoting_send_msgs_per_s: Math.round(median(remotingRates)),
    remoting_vs_http_produce_ratio: Number(median(ratios).toFixed(3)),
    remoting_pull_msgs_per_s: Math.round(remotingPull),
    http_pull_msgs_per_s: Math.round(httpPull),
    remoting_vs_http_pull_ratio: Number((remotingPull / httpPull).toFixed(3)),
    steal_share: produceSteal === undefined ? null : Number(produceSteal.toFixed(3)),
  };
  if (json) process.stdout.write(JSON.stringify(result) + "\n");
  else say(JSON.stringify(result, null, 2));
} finally {
  await broker.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
