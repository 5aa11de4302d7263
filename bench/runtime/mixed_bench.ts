// Produce latency while the same topic is consumed two ways at once. Same file on Deno and Bun:
//
//   deno run -A bench/runtime/mixed_bench.ts [--json] [--seconds 180] [--rate 1500]
//   bun run bench/runtime/mixed_bench.ts     [--json] …
//
// Child processes: the broker (runtime/main.ts, on Deno with deno.json's start V8 flags) and a
// webhook receiver (bench/webhook/receiver_server.ts), both on the runtime the bench runs on;
// the producer is latency_producer.mjs on Node.js (raw keep-alive HTTP/1.1, 32 connections,
// little CPU). Phases:
//   [1] alone: the producer sends --rate (1,500) 1 KiB produces/s to topic "alone" for
//       --baseline-seconds (20), nobody consuming: alone_p50_ms / alone_p99_ms, the baseline.
//   [2] mixed: topic "mixed" (8 queues) has a POP group with 4 consumers in this process
//       (receive max 32, waitMs 1000, one ack-batch per receive) and a webhook subscription
//       (startFrom latest) to the receiver; the producer sends --rate produces/s for --seconds
//       (180). mixed_p99_ms is the produce latency (tick that made it due -> 2xx answer),
//       first 2 s unrecorded. mixed_rss_growth_mib = the broker's RSS at the end minus at
//       60 s (at a third of the run when --seconds < 180).
// Then it waits (≤ 20 s) until the POP group and the receiver have every produced message:
// pop_missing and push_missing must be 0. Targets (issue #27): mixed_p99_ms ≤ 8,
// mixed_rss_growth_mib ≤ 32. bench/README.md has the figures.
import process from "node:process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { MqClient } from "../../client/mod.ts";
import { commandLine, machineIdleShare, round, runNodeJson, runtimeInfo, say } from "../support.ts";
import { type ServerChild, startBroker, startServer } from "../broker_process.ts";

const flags = commandLine();
const json = flags.has("json");
const seconds = flags.number("seconds", 180);
const rate = flags.number("rate", 1500);
const baselineSeconds = flags.number("baseline-seconds", 20);
const CONSUMERS = 4;
const QUEUES = 8;
const runtime = runtimeInfo();
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Produced {
  sent: number;
  ok: number;
  failed: number;
  late: number;
  rate: number;
  samples: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
}

/** latency_producer.mjs (Node.js) against `url` for `s` seconds; its JSON line. */
async function producer(url: string, s: number): Promise<Produced> {
  const r = await runNodeJson<Produced>([
    here("./latency_producer.mjs"),
    url,
    String(rate),
    String(s),
  ]);
  if (r.failed > 0) throw new Error(`the producer saw ${r.failed} failures`);
  return r;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** CONSUMERS POP loops on `topic` until `stop`; the distinct message ids they acked. */
function popConsumers(mq: MqClient, group: string, topic: string, stop: AbortSignal) {
  const seen = new Set<string>();
  let ackFailures = 0;
  const loop = async () => {
    while (!stop.aborted) {
      let batch;
      try {
        batch = await mq.receive(
          group,
          { topic, max: 32, invisibleMs: 30_000, waitMs: 1000 },
          stop,
        );
      } catch (err) {
        if (stop.aborted) return;
        throw err;
      }
      if (batch.length === 0) continue;
      const results = await mq.ackBatch(group, batch.map((m) => m.receiptHandle));
      results.forEach((r, i) => r.ok ? seen.add(batch[i].messageId) : ackFailures++);
    }
  };
  const done = Promise.all(Array.from({ length: CONSUMERS }, loop));
  return { seen, done, ackFailures: () => ackFailures };
}

const dataDir = mkdtempSync(`${tmpdir()}/mq-bench-mixed-`);
say(
  `# mixed_bench: runtime=${runtime.name} ${runtime.version} rate=${rate}/s seconds=${seconds} baseline=${baselineSeconds} s`,
);
const idleBefore = await machineIdleShare();
const receiver = await startServer(here("../webhook/receiver_server.ts"), {});
let broker: ServerChild | undefined;
try {
  broker = await startBroker(dataDir, { MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1" });
  const mq = new MqClient({ baseUrl: broker.url });
  for (const t of ["alone", "mixed"]) {
    await mq.upsertTopic(t, { readQueueNums: QUEUES, writeQueueNums: QUEUES });
  }

  say(`[1] alone: ${rate} produces/s for ${baselineSeconds} s, nobody consuming…`);
  const alone = await producer(`${broker.url}/v1/topics/alone/messages`, baselineSeconds);
  say(`  p50 ${alone.p50_ms} ms, p99 ${alone.p99_ms} ms, ${alone.rate}/s`);

  say(`[2] mixed: ${CONSUMERS} POP consumers + a webhook subscription, ${seconds} s…`);
  await mq.upsertGroup("mixed-pop");
  await mq.upsertSubscription("mixed-push", {
    topic: "mixed",
    url: `${receiver.url}/hook`,
    startFrom: "latest",
  });
  await fetch(`${receiver.url}/_reset`, { method: "POST" }).then((r) => r.arrayBuffer());
  const stop = new AbortController();
  const pop = popConsumers(mq, "mixed-pop", "mixed", stop.signal);
  const markS = Math.min(60, seconds / 3);
  const rss: { at: number; mib: number }[] = [];
  const startedAt = performance.now();
  const sampler = setInterval(() => {
    const at = (performance.now() - startedAt) / 1000;
    rss.push({ at, mib: rssMiB(broker!.pid) });
    if (Math.round(at) % 30 === 0) {
      say(
        `  ${Math.round(at)} s: broker RSS ${
          rss.at(-1)!.mib.toFixed(1)
        } MiB, popped ${pop.seen.size}`,
      );
    }
  }, 1000);
  const mixed = await producer(`${broker.url}/v1/topics/mixed/messages`, seconds);
  clearInterval(sampler);
  const rssEnd = rssMiB(broker.pid);
  const rssMark = rss.find((s) => s.at >= markS)?.mib ?? NaN;
  say(`  p50 ${mixed.p50_ms} ms, p99 ${mixed.p99_ms} ms, max ${mixed.max_ms} ms, ${mixed.rate}/s`);

  // Both consumers must end with every produced message.
  let pushed = 0;
  for (let waited = 0; waited < 20_000; waited += 250) {
    const stats = await fetch(`${receiver.url}/_stats`).then((r) => r.json());
    pushed = stats.distinct;
    if (pushed >= mixed.ok && pop.seen.size >= mixed.ok) break;
    await sleep(250);
  }
  stop.abort();
  await pop.done;
  const out = {
    runtime: runtime.name,
    runtime_version: runtime.version,
    rate_msgs_per_s: rate,
    seconds,
    achieved_msgs_per_s: mixed.rate,
    mixed_p50_ms: mixed.p50_ms,
    mixed_p99_ms: mixed.p99_ms,
    mixed_p999_ms: mixed.p999_ms,
    mixed_max_ms: mixed.max_ms,
    alone_p50_ms: alone.p50_ms,
    alone_p99_ms: alone.p99_ms,
    mixed_vs_alone_p99_ratio: round(mixed.p99_ms / alone.p99_ms),
    late_produces: mixed.late,
    rss_mark_s: round(markS),
    rss_at_mark_mib: round(rssMark),
    rss_end_mib: round(rssEnd),
    mixed_rss_growth_mib: round(rssEnd - rssMark),
    produced: mixed.ok,
    pop_missing: Math.max(0, mixed.ok - pop.seen.size),
    pop_ack_failures: pop.ackFailures(),
    push_missing: Math.max(0, mixed.ok - pushed),
    machine_idle_before: idleBefore === undefined ? null : round(idleBefore),
  };
  say("");
  for (const [k, v] of Object.entries(out)) say(`  ${k.padEnd(26)} ${v}`);
  if (json) process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  await broker?.stop();
  await receiver.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
