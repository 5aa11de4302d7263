// Cluster benchmark (issue #26), on one machine, so it measures what scales rather than
// aggregate throughput (figures and the N-machine estimate: bench/README.md "Cluster"):
//   deno run -A bench/cluster/cluster_bench.ts [--json] [--runtime deno|bun]
//     [--coordination etcd|kv-host] [--seconds 5] [--rounds 3] [--messages 1000000]
//     [--rate 200] [--only hop|cluster] [--coalesce true|false]
//     [--in-flight N] [--hop-connections 32,128,512]
// It starts local clusters (tools/cluster/local_cluster.ts: real processes, free ports)
// with children on --runtime (default: the runtime it runs on) and prints one JSON line:
//   functions_hop_ratio    single 1 KiB produces/s through a functions process ÷ straight
//                          to the broker: each path's best over the same loads
//                          (autocannon at each of --hop-connections; at each, the
//                          median of --rounds alternating runs of --seconds), one group;
//                          hop_ratio_c<N> the ratio at N connections
//   hop_messages_per_batch single produces per batch call the functions' coalescer made
//                          (clusterProduceCoalesceEnable; --coalesce false turns it off)
//   group_balance          max/min share of messages per group over --messages (1 M) small
//                          messages, 3 groups; BATCH produce through the functions (100 per
//                          call, 8 calls in flight), which the router splits per group
//   route_cache_hit_ratio  the functions' route cache over the balance run's second half
//                          (steady state), from its /metrics
//   failover_takeover_ms   kill -9 of broker-b's master (master + slave, ASYNC, lease TTL
//                          3 s) → its slave says it is master
//   failover_ms            the same kill → the first write acknowledged on broker-b again,
//                          under --rate paced produces/s through the functions (the router
//                          skips a failed group for clusterFaultBackoffMs, 10 s by default)
//   *_cpu_us_per_msg       CPU µs per message of the brokers and of the functions process
//                          (Linux /proc), single produces (hop phase) and batches (balance
//                          phase): the per-group cost bench/README.md scales to N machines
//   others_p99_before_ms / others_p99_during_ms / others_p99_ratio
//                          p99 latency of produces broker-a and broker-c took, the 5 s
//                          before the kill and from the kill to broker-b's recovery
// The load generators share the 2 cores with every server: ratios hold, absolute figures
// are for a fraction of the machine.
import process from "node:process";
import { rmSync, writeFileSync } from "node:fs";
import { MqClient } from "../../client/mod.ts";
import { LocalCluster } from "../../tools/cluster/local_cluster.ts";
import type { CoordinationKind } from "../../tools/cluster/coordination.ts";
import { etcdBinary } from "../../tools/cluster/etcd.ts";
import { tempDir } from "../../tools/cluster/process.ts";
import {
  autocannonPost,
  busyMachineWarning,
  commandLine,
  machineIdleShare,
  median,
  percentile,
  round,
  runtimeInfo,
  say,
  sleep,
} from "../support.ts";
import { batchSpread, CpuMeter, PacedProducer, slotGroups } from "./load.ts";

const flags = commandLine();
const json = flags.has("json");
const self = runtimeInfo().name;
const runtime = flags.string("runtime", self === "bun" ? "bun" : "deno") as "deno" | "bun";
const coordination = flags.string(
  "coordination",
  etcdBinary() ? "etcd" : "kv-host",
) as CoordinationKind;
const seconds = flags.number("seconds", 5);
const rounds = flags.number("rounds", 3);
const messages = flags.number("messages", 1_000_000);
const rate = flags.number("rate", 200);
const hopConnections = flags.string("hop-connections", "32,128,512").split(",").map(Number);
const BROKER_ENV = {
  MQ_GRPC: "false",
  MQ_REMOTING: "false",
  MQ_LOG_LEVEL: "error",
  MQ_FLUSH_DISK_TYPE: "ASYNC_FLUSH",
  MQ_LEASE_TTL_MS: "3000",
  MQ_LEASE_MARGIN_MS: "500",
  MQ_ROUTE_HEARTBEAT_MS: "1000",
};
// --coalesce false: the functions send every single produce alone (the A/B of
// clusterProduceCoalesceEnable, docs/cluster.md); --in-flight N: calls in flight per group
// and topic before a batch lingers (clusterProduceCoalesceInFlightMax; 0: never).
const FUNCTIONS_ENV = {
  MQ_GRPC: "false",
  MQ_LOG_LEVEL: "error",
  MQ_CLUSTER_PRODUCE_COALESCE: flags.string("coalesce", "true"),
  ...(flags.has("in-flight")
    ? { MQ_CLUSTER_PRODUCE_COALESCE_IN_FLIGHT_MAX: flags.string("in-flight", "1") }
    : {}),
};

/** A counter's value from a functions process's /metrics text. */
async function counters(url: string): Promise<(name: string) => number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return (name: string) => {
    const line = text.split("\n").find((l) => l.startsWith(name + " "));
    return line ? Number(line.split(" ")[1]) : undefined;
  };
}

/** Route cache hits and misses from a functions process's /metrics. */
async function cacheCounters(url: string): Promise<{ hits: number; misses: number } | undefined> {
  const read = await counters(url);
  const hits = read("mq_cluster_route_cache_hits_total");
  const misses = read("mq_cluster_route_cache_misses_total");
  return hits === undefined || misses === undefined ? undefined : { hits, misses };
}

async function hopPhase(): Promise<Record<string, number>> {
  await using cluster = await new LocalCluster({
    runtime,
    groups: 1,
    coordination,
    brokerEnv: BROKER_ENV,
    functionsEnv: FUNCTIONS_ENV,
  }).start();
  const fn = cluster.url;
  const broker = (await cluster.groups[0].master()).url!;
  await new MqClient({ baseUrl: fn, retries: 0 }).upsertTopic("Hop", {
    readQueueNums: 8,
    writeQueueNums: 8,
  });
  const dir = tempDir("cluster-bench");
  const bodyFile = `${dir}/body`;
  writeFileSync(bodyFile, "z".repeat(1024));
  const path = "/v1/topics/Hop/messages";
  try {
    await autocannonPost(`${fn}${path}`, bodyFile, 32, 1); // warm-up, both paths
    const brokerPid = cluster.groups[0].pids();
    const fnPid = [cluster.functions[0].run.pid];
    const out: Record<string, number> = {};
    const peak = { direct: 0, through: 0, directAt: 0, throughAt: 0 };
    for (const c of hopConnections) {
      const direct: number[] = [];
      const through: number[] = [];
      const cpu = { direct: [] as number[], brokerHop: [] as number[], fnHop: [] as number[] };
      for (let i = 0; i < rounds; i++) {
        const alone = new CpuMeter(brokerPid);
        const d = (await autocannonPost(`${broker}${path}`, bodyFile, c, seconds)).rate;
        cpu.direct.push(alone.usPerMessage(d * seconds) ?? NaN);
        const [b, fm] = [new CpuMeter(brokerPid), new CpuMeter(fnPid)];
        const f = (await autocannonPost(`${fn}${path}`, bodyFile, c, seconds)).rate;
        cpu.brokerHop.push(b.usPerMessage(f * seconds) ?? NaN);
        cpu.fnHop.push(fm.usPerMessage(f * seconds) ?? NaN);
        direct.push(d);
        through.push(f);
        if (!json) {
          say(`hop c${c} round ${i + 1}: direct ${d.toFixed(0)}/s, functions ${f.toFixed(0)}/s`);
        }
      }
      const [d, f] = [median(direct), median(through)];
      out[`hop_ratio_c${c}`] = round(f / d);
      out[`direct_produce_per_s_c${c}`] = Math.round(d);
      out[`functions_produce_per_s_c${c}`] = Math.round(f);
      if (d > peak.direct) Object.assign(peak, { direct: d, directAt: c });
      if (f > peak.through) Object.assign(peak, { through: f, throughAt: c });
      // CPU per single produce: the broker taking it straight, and the broker and the
      // functions process when it comes through the functions (bench/README.md: N
      // machines); the last (heaviest) load's figures are kept.
      out.broker_cpu_us_per_msg = median(cpu.direct);
      out.broker_cpu_us_per_msg_via_functions = median(cpu.brokerHop);
      out.functions_cpu_us_per_msg = median(cpu.fnHop);
    }
    const read = await counters(fn);
    const batches = read("mq_cluster_produce_coalesced_batches_total") ?? 0;
    const coalesced = read("mq_cluster_produce_coalesced_messages_total") ?? 0;
    return {
      // Single produces the functions sent inside batch calls (warm-up included), and how
      // many per call (runtime/cluster/produce_coalescer.ts).
      hop_coalesced_messages: coalesced,
      hop_messages_per_batch: batches > 0 ? round(coalesced / batches) : 0,
      // The hop's cost in capacity: each path's best rate over the same loads (a hop at
      // 32 connections is latency-bound with cores idle: bench/README.md, "The hop, round 4").
      functions_hop_ratio: round(peak.through / peak.direct),
      direct_produce_per_s: Math.round(peak.direct),
      direct_peak_connections: peak.directAt,
      functions_produce_per_s: Math.round(peak.through),
      functions_peak_connections: peak.throughAt,
      ...out,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function clusterPhases(): Promise<Record<string, number | null>> {
  await using cluster = await new LocalCluster({
    runtime,
    groups: 3,
    replicas: (i) => i === 1 ? 2 : 1,
    coordination,
    brokerEnv: BROKER_ENV,
    functionsEnv: FUNCTIONS_ENV,
  }).start();
  const client = new MqClient({ baseUrl: cluster.url, retries: 0 });
  await client.upsertTopic("Balance", { readQueueNums: 4, writeQueueNums: 4 });
  // Balance: the first half warms the route cache, the second half is the steady state.
  const half = Math.floor(messages / 2);
  const brokersCpu = new CpuMeter(cluster.groups.flatMap((g) => g.pids()));
  const functionsCpu = new CpuMeter([cluster.functions[0].run.pid]);
  const first = await batchSpread(cluster.url, "Balance", half, 100, 8);
  const before = await cacheCounters(cluster.url);
  const second = await batchSpread(cluster.url, "Balance", messages - half, 100, 8);
  const after = await cacheCounters(cluster.url);
  const batchBrokerUs = brokersCpu.usPerMessage(messages);
  const batchFunctionsUs = functionsCpu.usPerMessage(messages);
  const shares = ["broker-a", "broker-b", "broker-c"].map((g) =>
    (first.perGroup.get(g) ?? 0) + (second.perGroup.get(g) ?? 0)
  );
  if (!json) {
    say(`balance: ${shares.join(" / ")} in ${(first.seconds + second.seconds).toFixed(1)} s`);
  }
  const cacheRatio = before && after
    ? (after.hits - before.hits) /
      Math.max(1, after.hits - before.hits + after.misses - before.misses)
    : null;

  // Failover of broker-b under paced load; latencies of what a and c took.
  await client.upsertTopic("Failover", { readQueueNums: 4, writeQueueNums: 4 });
  const paced = new PacedProducer(client, "Failover", await slotGroups(cluster.url, "Failover"));
  paced.start(rate);
  await sleep(7000);
  const b = cluster.group("broker-b");
  const master = await b.master();
  const killedAt = performance.now();
  await b.kill(master.id);
  const takeover = await b.master(60_000, master.id).then(() => performance.now() - killedAt);
  let recoveredAt: number | undefined;
  while (performance.now() - killedAt < 60_000) {
    const back = paced.samples.find((s) => s.at > killedAt && s.ok && s.group === "broker-b");
    if (back) {
      recoveredAt = back.at + back.ms;
      break;
    }
    await sleep(50);
  }
  await sleep(1000);
  await paced.stop();
  const others = (from: number, to: number) =>
    paced.samples.filter((s) =>
      s.ok && s.at >= from && s.at < to && (s.group === "broker-a" || s.group === "broker-c")
    ).map((s) => s.ms).sort((x, y) => x - y);
  const p99Before = percentile(others(killedAt - 5000, killedAt), 0.99);
  const p99During = percentile(others(killedAt, recoveredAt ?? performance.now()), 0.99);
  return {
    group_balance: round(Math.max(...shares) / Math.max(1, Math.min(...shares))),
    balance_failed: first.failed + second.failed,
    balance_msgs_per_s: Math.round(messages / (first.seconds + second.seconds)),
    batch_broker_cpu_us_per_msg: batchBrokerUs,
    batch_functions_cpu_us_per_msg: batchFunctionsUs,
    route_cache_hit_ratio: cacheRatio === null ? null : Math.round(cacheRatio * 10000) / 10000,
    failover_takeover_ms: Math.round(takeover),
    failover_ms: recoveredAt === undefined ? null : Math.round(recoveredAt - killedAt),
    others_p99_before_ms: round(p99Before),
    others_p99_during_ms: round(p99During),
    others_p99_ratio: round(p99During / Math.max(0.001, p99Before)),
    failover_failed_calls: paced.samples.filter((s) => !s.ok && s.at >= killedAt).length,
  };
}

const idle = await machineIdleShare();
const warning = busyMachineWarning(idle);
if (warning && !json) say(warning);
const only = flags.string("only", "");
const hop = only === "cluster" ? {} : await hopPhase();
const rest = only === "hop" ? {} : await clusterPhases();
const result = {
  bench: "cluster",
  runtime,
  coordination,
  machine_idle_before: idle,
  seconds,
  rounds,
  messages,
  rate,
  ...hop,
  ...rest,
};
if (json) process.stdout.write(JSON.stringify(result) + "\n");
else say(JSON.stringify(result, null, 2));
