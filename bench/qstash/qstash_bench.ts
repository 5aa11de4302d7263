// QStash-compatible API benchmark (issue #22): deliveries per second end to end through
// /v2/publish to a URL group of one endpoint, beside native produce to a topic with one
// webhook subscription, in the same run, same broker, same receiver. Same file on Deno and
// Bun:
//
//   deno run -A bench/qstash/qstash_bench.ts [--json] [--messages N] [--rounds R]
//   bun run bench/qstash/qstash_bench.ts [--json] [--messages N] [--rounds R]
//
// Children on the bench's runtime: the receiver (bench/webhook/receiver_server.ts, counts
// POSTs) and the broker (ASYNC_FLUSH, a temporary folder, MQ_WEBHOOK_ALLOW_HOSTS=127.0.0.1,
// MQ_QSTASH_CONCURRENCY = the native subscription's maxConcurrency, --concurrency 16).
// Each round runs both sides one after the other (the order alternates): --publishers (16)
// loops send --messages (4,000) single messages of 1 KiB, native with the SDK's produce(),
// QStash with the real @upstash/qstash Client's publish({urlGroup}); the clock runs from
// the first send until the receiver has counted every message (stderr also shows when the
// sends ended). Each side's best round counts (3 rounds; the machine is shared): qstash_publish_vs_native_ratio = qstash deliveries/s / native deliveries/s.
// Settings go to stderr; with --json the last stdout line is one JSON object.
// bench/README.md has the figures.
import process from "node:process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { Client } from "@upstash/qstash";
import { MqClient } from "../../client/mod.ts";
import {
  busyMachineWarning,
  commandLine,
  idleText,
  machineIdleShare,
  median,
  round,
  runtimeInfo,
} from "../support.ts";
import { startBroker, startServer } from "../broker_process.ts";

const flags = commandLine();
const json = flags.has("json");
const messages = Math.round(flags.number("messages", 4_000));
const rounds = Math.round(flags.number("rounds", 5));
const publishers = Math.round(flags.number("publishers", 16));
const concurrency = Math.round(flags.number("concurrency", 16));
const body = "x".repeat(1024);
const runtime = runtimeInfo();
const say = (line: string) => process.stderr.write(line + "\n");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

const idle = await machineIdleShare(1000);
const receiver = await startServer(here("../webhook/receiver_server.ts"), {});
const dir = mkdtempSync(`${tmpdir()}/mq-qstash-bench-`);
const broker = await startBroker(dir, {
  MQ_LOG_LEVEL: "warn",
  MQ_WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  MQ_QSTASH_CONCURRENCY: String(concurrency),
});
const stats = async () =>
  (await (await fetch(`${receiver.url}/_stats`)).json()) as { requests: number };

try {
  const mq = new MqClient({ baseUrl: broker.url });
  const qstash = new Client({
    baseUrl: broker.url,
    token: "bench",
    retry: false,
    enableTelemetry: false,
  });
  await mq.upsertTopic("bench-native", {});
  await mq.upsertSubscription("bench-native", {
    topic: "bench-native",
    url: `${receiver.url}/native`,
    maxConcurrency: concurrency,
  });
  await qstash.urlGroups.addEndpoints({
    name: "bench",
    endpoints: [{ url: `${receiver.url}/qstash` }],
  });
  const sides = {
    native: () => mq.produce("bench-native", { body }),
    qstash: () => qstash.publish({ urlGroup: "bench", body }),
  };
  say(
    `# qstash_bench on ${runtime.name} ${runtime.version}: ${messages} messages of 1 KiB, ` +
      `${publishers} publishers, concurrency ${concurrency}, ${rounds} rounds, idle ${
        idleText(idle)
      }`,
  );
  const warning = busyMachineWarning(idle);
  if (warning) say(warning);

  const run = async (side: keyof typeof sides, n: number): Promise<number> => {
    await fetch(`${receiver.url}/_reset`, { method: "POST" }).then((r) => r.body?.cancel());
    const send = sides[side];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: publishers }, async () => {
        while (next < n) {
          next++;
          await send();
        }
      }),
    );
    const sentIn = performance.now() - started;
    let last = -1;
    let lastChange = performance.now();
    for (;;) {
      const { requests } = await stats();
      if (requests >= n) break;
      if (requests !== last) [last, lastChange] = [requests, performance.now()];
      if (performance.now() - lastChange > 30_000) {
        throw new Error(`${side}: ${requests} of ${n} delivered, no progress for 30 s`);
      }
      await sleep(20);
    }
    const total = performance.now() - started;
    if (n === messages) {
      say(`  ${side}: sends took ${Math.round(sentIn)} ms, deliveries ${Math.round(total)} ms`);
    }
    return n / (total / 1000);
  };

  await run("native", 500); // warm-up, not counted
  await run("qstash", 500);
  const best = { native: 0, qstash: 0 };
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const order: (keyof typeof sides)[] = r % 2 ? ["qstash", "native"] : ["native", "qstash"];
    const rates = { native: 0, qstash: 0 };
    for (const side of order) {
      rates[side] = await run(side, messages);
      best[side] = Math.max(best[side], rates[side]);
      say(`  round ${r + 1} ${side}: ${Math.round(rates[side])} deliveries/s`);
    }
    ratios.push(rates.qstash / rates.native);
  }
  // Back-to-back pairs share the machine's load of the moment: the median pair's ratio
  // is steadier than the ratio of two bests on a busy machine.
  const ratio = median(ratios);
  say(
    `native ${Math.round(best.native)}/s, qstash ${Math.round(best.qstash)}/s, ratio ${
      ratio.toFixed(2)
    }`,
  );
  if (json) {
    console.log(JSON.stringify({
      bench: "qstash",
      runtime: runtime.name,
      runtime_version: runtime.version,
      messages,
      publishers,
      concurrency,
      native_deliveries_per_s: round(best.native),
      qstash_deliveries_per_s: round(best.qstash),
      qstash_publish_vs_native_ratio: round(ratio),
      round_ratios: ratios.map(round),
      machine_idle_before: idle === undefined ? null : round(idle),
    }));
  }
} finally {
  await broker.stop();
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
}
