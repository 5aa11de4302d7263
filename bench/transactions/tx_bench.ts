// Transactional messages benchmark (issue #23), same file on Deno and Bun:
//
//   deno run -A bench/transactions/tx_bench.ts [--json] [--quick]
//   bun run bench/transactions/tx_bench.ts     [--json] [--quick]
//
// Starts the broker as a child on the runtime it runs on (ASYNC_FLUSH, transactionTimeoutMs
// 1000, a new folder under os.tmpdir(), deleted at the end), then:
//
//   [1] throughput at --concurrency (64) loops over HTTP, 1 KiB bodies: --rounds (7; 3 with
//       --quick) of two --phase-s (1) second phases, their order alternating:
//         plain: POST /v1/topics/T/messages
//         tx:    POST … with Mq-Transaction: begin, then POST /v1/transactions/{id}/commit
//       tx_commit_vs_plain_produce_ratio = the median over rounds of transactions/s ÷ plain
//       produces/s in the same round (goal ≥ 0.4); the rates are medians too.
//   [2] check lag: --orphans (400; 150 with --quick) transactions begun over 2 s and never
//       decided; a producer long-polls its group's checks and rolls each back. Lag = when
//       the check reached it − (store time + transactionTimeoutMs); p50/p99/max
//       (tx_check_lag_ms_p99 goal ≤ 1000). Every orphan must be checked exactly once
//       before its rollback, else the bench exits 1.
//
// Settings and progress go to stderr; with --json the last stdout line is one JSON object.
// bench/README.md keeps the figures.
import process from "node:process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { commandLine, median, percentile, round, runtimeInfo } from "../support.ts";
import { startBroker } from "../broker_process.ts";

const TOPIC = "TxBench";
const TIMEOUT_MS = 1000;
const flags = commandLine();
const quick = flags.has("quick");
const json = flags.has("json");
const concurrency = Math.round(flags.number("concurrency", 64));
const phaseMs = flags.number("phase-s", 1) * 1000;
const rounds = Math.round(flags.number("rounds", quick ? 3 : 7));
const orphans = Math.round(flags.number("orphans", quick ? 150 : 400));
const runtime = runtimeInfo();
const say = (line: string) => process.stderr.write(line + "\n");
const body = new Uint8Array(1024).fill(120);

async function post(url: string, headers: Record<string, string> = {}, data?: Uint8Array) {
  const res = await fetch(url, { method: "POST", headers, body: data as BodyInit | undefined });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 201) throw new Error(`${res.status} ${text}`);
  return JSON.parse(text);
}

/** Runs `op` in `concurrency` loops for `ms`; answers operations per second. */
async function phase(ms: number, op: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const end = performance.now() + ms;
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      await op();
      done++;
    }
  }));
  return done / ((performance.now() - start) / 1000);
}

const dataDir = mkdtempSync(`${tmpdir()}/mq-txbench-`);
const broker = await startBroker(dataDir, { MQ_TRANSACTION_TIMEOUT_MS: String(TIMEOUT_MS) });
let failed = false;
try {
  const base = broker.url;
  await fetch(`${base}/v1/topics/${TOPIC}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ readQueueNums: 8, writeQueueNums: 8 }),
  }).then((r) => r.body?.cancel());
  say(
    `${runtime.name} ${runtime.version}: c=${concurrency}, ${rounds} rounds of ${phaseMs} ms phases, orphans ${orphans}`,
  );
  const produceUrl = `${base}/v1/topics/${TOPIC}/messages`;
  const plain = () => post(produceUrl, { "content-type": "text/plain" }, body);
  const txHeaders = {
    "content-type": "text/plain",
    "mq-transaction": "begin",
    "mq-producer-group": "bench",
  };
  const tx = async () => {
    const begun = await post(produceUrl, txHeaders, body);
    await post(`${base}/v1/transactions/${begun.transactionId}/commit`);
  };
  await phase(500, plain); // warm-up
  await phase(500, tx);
  // Short phases, alternating: the machine's load drifts (other processes share it), and a
  // ratio of neighbouring phases survives drift better than one of averages.
  const plainRates: number[] = [];
  const txRates: number[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Which goes first alternates, so neither always follows the other's garbage.
    if (r % 2 === 0) plainRates.push(await phase(phaseMs, plain));
    txRates.push(await phase(phaseMs, tx));
    if (r % 2 === 1) plainRates.push(await phase(phaseMs, plain));
    ratios.push(txRates[r] / plainRates[r]);
    say(
      `round ${r + 1}: plain ${plainRates[r].toFixed(0)}/s, begin+commit ${
        txRates[r].toFixed(0)
      }/s, ratio ${ratios[r].toFixed(3)}`,
    );
  }
  const plainRate = median(plainRates);
  const txRate = median(txRates);
  const ratio = median(ratios);

  // [2] check lag: orphans, checked by long poll, rolled back on their first check.
  const stored = new Map<string, number>();
  const lags: number[] = [];
  const checkedTwice: string[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const res = await fetch(
        `${base}/v1/producer-groups/orphans/transaction-checks?waitMs=500&max=256`,
      );
      const { checks } = await res.json() as {
        checks: { transactionId: string; check: number }[];
      };
      const at = Date.now();
      await Promise.all(checks.map(async (c) => {
        if (c.check !== 1) checkedTwice.push(c.transactionId);
        const storedAt = stored.get(c.transactionId);
        if (storedAt !== undefined) lags.push(at - (storedAt + TIMEOUT_MS));
        await post(`${base}/v1/transactions/${c.transactionId}/rollback`);
      }));
    }
  })();
  const orphanHeaders = { ...txHeaders, "mq-producer-group": "orphans" };
  for (let i = 0; i < orphans; i++) {
    const begun = await post(produceUrl, orphanHeaders, body);
    stored.set(begun.transactionId, begun.storeTimestamp);
    await new Promise((r) => setTimeout(r, 2000 / orphans));
  }
  const deadline = performance.now() + TIMEOUT_MS + 10_000;
  while (lags.length < orphans && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  polling = false;
  await poller;
  lags.sort((a, b) => a - b);
  if (lags.length !== orphans || checkedTwice.length > 0) {
    say(`FAILED: ${lags.length}/${orphans} orphans checked, ${checkedTwice.length} twice`);
    failed = true;
  }
  const result = {
    bench: "tx_bench",
    runtime: runtime.name,
    version: runtime.version,
    concurrency,
    plain_produce_per_s: round(plainRate),
    tx_begin_commit_per_s: round(txRate),
    tx_commit_vs_plain_produce_ratio: round(ratio),
    tx_check_lag_ms_p50: round(percentile(lags, 0.5)),
    tx_check_lag_ms_p99: round(percentile(lags, 0.99)),
    tx_check_lag_ms_max: round(lags.at(-1) ?? NaN),
    orphans_checked: lags.length,
  };
  say(
    `ratio ${result.tx_commit_vs_plain_produce_ratio} (goal >= 0.4); check lag p50 ${result.tx_check_lag_ms_p50} ms, p99 ${result.tx_check_lag_ms_p99} ms (goal <= 1000)`,
  );
  if (json) process.stdout.write(JSON.stringify(result) + "\n");
} finally {
  await broker.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
if (failed) process.exit(1);
