// CPU profile of a functions process under the hop load of cluster_bench.ts (single 1 KiB
// produces, 32 connections), to see where its µs per message go:
//   deno run -A bench/cluster/profile_hop.ts [--runtime deno|bun] [--out DIR] [--seconds 8]
//     [--coalesce true|false]
// One group on etcd (tools/cluster/local_cluster.ts); the functions process is started here
// with --cpu-prof, stopped with SIGTERM (the profile is written on exit), and the rate is
// printed with the messages per coalesced batch: group the .cpuprofile per message with
// bench/cluster/hop_profile_table.mjs (`node hop_profile_table.mjs DIR/*.cpuprofile <rate>`).
// Figures: bench/README.md.
import process from "node:process";
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { MqClient } from "../../client/mod.ts";
import { LocalCluster } from "../../tools/cluster/local_cluster.ts";
import { runtimeBinary, tempDir } from "../../tools/cluster/process.ts";
import { autocannonPost, commandLine, say, sleep } from "../support.ts";

const flags = commandLine();
const runtime = flags.string("runtime", "deno") as "deno" | "bun";
const out = flags.string("out", tempDir("hop-profile"));
const seconds = flags.number("seconds", 8);
mkdirSync(out, { recursive: true });

await using cluster = await new LocalCluster({
  runtime,
  groups: 1,
  functions: 0,
  brokerEnv: { MQ_GRPC: "false", MQ_REMOTING: "false", MQ_LOG_LEVEL: "error" },
}).start();
const profile = [`--cpu-prof`, `--cpu-prof-dir=${out}`];
const child = spawn(
  runtimeBinary(runtime),
  runtime === "deno"
    ? ["run", "-A", ...profile, "functions/main.ts"]
    : [...profile, "functions/main.ts"],
  {
    env: {
      ...process.env,
      PORT: "0",
      MQ_GRPC: "false",
      MQ_LOG_LEVEL: "error",
      MQ_CLUSTER_PRODUCE_COALESCE: flags.string("coalesce", "true"),
      ...cluster.sharedEnv,
    },
    stdio: ["ignore", "pipe", "inherit"],
  },
);
try {
  const url = await new Promise<string>((resolve, reject) => {
    let text = "";
    child.once("exit", () => reject(new Error("functions process exited")));
    child.stdout!.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      const m = /\{"event":"listening","url":"([^"]+)"/.exec(text);
      if (m) resolve(m[1]);
    });
  });
  await sleep(1500); // the route source's first read of the live groups
  await new MqClient({ baseUrl: url, retries: 0 }).upsertTopic("Hop", {
    readQueueNums: 8,
    writeQueueNums: 8,
  });
  const body = `${out}/body`;
  writeFileSync(body, "z".repeat(1024));
  const path = `${url}/v1/topics/Hop/messages`;
  await autocannonPost(path, body, 32, 1);
  const rate = (await autocannonPost(path, body, 32, seconds)).rate;
  rmSync(body);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string) =>
    Number(metrics.split("\n").find((l) => l.startsWith(name + " "))?.split(" ")[1] ?? 0);
  const batches = read("mq_cluster_produce_coalesced_batches_total");
  const perBatch = batches > 0
    ? Math.round(read("mq_cluster_produce_coalesced_messages_total") / batches * 10) / 10
    : 0;
  say(`${runtime}: ${rate.toFixed(0)} produces/s through the functions; profile in ${out}`);
  console.log(JSON.stringify({ runtime, rate: Math.round(rate), seconds, perBatch, out }));
} finally {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
}
