// gRPC front end benchmark, beside the HTTP API in the same run. Same file on Deno and Bun:
//   deno run -A bench/grpc/grpc_bench.ts [--json] [--seconds 5] [--rounds 3]
//   bun run bench/grpc/grpc_bench.ts [--json] [--seconds 5] [--rounds 3]
// It starts the broker (ASYNC_FLUSH, fresh temp folder, HTTP and gRPC on free ports) on
// the runtime it runs on. Figures:
//   grpc_vs_http_produce_ratio   single 1 KiB sends/s over gRPC (SendMessage, one message
//                                per call as the official clients send: h2_load.mjs, Node.js
//                                bare node:http2, 64 calls in flight over --grpc-connections
//                                (64) connections)
//                                over HTTP produces/s (autocannon, Node.js, 64 connections):
//                                the median of --rounds (3) alternating runs of --seconds
//   grpc_receive_ack_msgs_per_s  ReceiveMessage (batch 32) + AckMessage (one entry per
//                                message, as SimpleConsumer acks) from 4 loops in this
//                                process, over a queue filled beforehand
//   http_pop_receive_ack_msgs_per_s  the same over HTTP POP: receive (max 32) + ack batch
// The load generators share the 2 cores with the broker; the ratios hold on a noisy machine
// better than the absolute figures (bench/README.md).
import process from "node:process";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as grpc from "@grpc/grpc-js";
import { MqClient } from "../../client/mod.ts";
import { loadMessagingService } from "../../functions/grpc/proto.ts";
import { brokerDenoV8Flags, commandLine, median, runtimeInfo, say } from "../support.ts";

const flags = commandLine();
const json = flags.has("json");
const seconds = flags.number("seconds", 5);
const rounds = flags.number("rounds", 3);
const CONNECTIONS = 64;
/** --grpc-connections N: HTTP/2 connections the 64 gRPC calls in flight share (default 64,
 * one call each, as autocannon's 64 connections; real clients use one per endpoint). */
const GRPC_CONNECTIONS = flags.number("grpc-connections", 64);
const BODY_BYTES = 1024;
const RECEIVE_LOOPS = 4;
const RECEIVE_BATCH = 32;
const PREFILL = 40_000;
const rt = runtimeInfo();
// deno-lint-ignore no-explicit-any
const g = globalThis as any;

interface Broker {
  url: string;
  grpc: string;
  stop(): Promise<void>;
}

function startBroker(dataDir: string): Promise<Broker> {
  const argv = g.Deno
    ? ["run", brokerDenoV8Flags(), "-A", "runtime/main.ts"]
    : ["run", "runtime/main.ts"];
  const child = spawn(process.execPath, argv, {
    env: {
      ...process.env,
      PORT: "0",
      MQ_GRPC_PORT: "0",
      DATA_DIR: dataDir,
      MQ_LOG_LEVEL: "error",
      MQ_FLUSH_DISK_TYPE: "ASYNC_FLUSH",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buf += chunk;
      const line = buf.split("\n").find((l) => l.includes('"listening"'));
      if (!line) return;
      buf = "";
      const { url, grpc } = JSON.parse(line);
      resolve({
        url,
        grpc,
        stop: () =>
          new Promise((done) => {
            child.on("close", () => done());
            child.kill("SIGTERM");
          }),
      });
    });
    child.on("error", reject);
  });
}

/** Runs a Node.js load process and returns its JSON line. */
function nodeJson(args: string[]): Promise<{ requests: number; errors: number; non2xx?: number }> {
  const child = spawn("node", args, { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => out += c);
    child.on("close", () => {
      try {
        resolve(JSON.parse(out.trim().split("\n").pop()!));
      } catch (err) {
        reject(err);
      }
    });
  });
}

async function httpProduceRate(url: string, bodyFile: string): Promise<number> {
  const cli = new URL("../../node_modules/autocannon/autocannon.js", import.meta.url).pathname;
  const r = await nodeJson([
    cli,
    ...["-c", String(CONNECTIONS), "-d", String(seconds), "-m", "POST", "-i", bodyFile, "-j"],
    `${url}/v1/topics/bench/messages`,
  ]) as unknown as { requests: { average: number }; non2xx: number; errors: number };
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`autocannon: ${r.non2xx} non-2xx`);
  return r.requests.average;
}

async function grpcProduceRate(address: string): Promise<number> {
  const script = new URL("./h2_load.mjs", import.meta.url).pathname;
  const r = await nodeJson([
    script,
    address,
    "bench",
    String(CONNECTIONS),
    String(seconds),
    String(BODY_BYTES),
    String(GRPC_CONNECTIONS),
  ]);
  if (r.errors > 0) throw new Error(`h2_load: ${r.errors} failed sends`);
  return r.requests;
}

async function prefill(mq: MqClient, topic: string) {
  const body = "x".repeat(BODY_BYTES);
  for (let i = 0; i < PREFILL; i += 500) {
    await mq.produceBatch(topic, Array.from({ length: 500 }, () => ({ body })));
  }
}

/** Messages/s received and acked by `loops` loops of `step` for `seconds`. */
async function drainRate(step: () => Promise<number>): Promise<number> {
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  let n = 0;
  await Promise.all(Array.from({ length: RECEIVE_LOOPS }, async () => {
    while (performance.now() < until) {
      const got = await step();
      if (got === 0) break; // drained
      n += got;
    }
  }));
  return n / ((performance.now() - started) / 1000);
}

function grpcConsumer(address: string) {
  const service = loadMessagingService();
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("x-mq-client-id", `bench-consumer@${process.pid}`);
  const def = (name: string) => Object.values(service).find((d) => d.originalName === name)!;
  const receive = def("receiveMessage");
  const ack = def("ackMessage");
  const group = { name: "grpc-pop" };
  const topic = { name: "pop-grpc" };
  return {
    close: () => client.close(),
    step: () =>
      new Promise<number>((resolve, reject) => {
        const handles: { messageId: string; receiptHandle: string }[] = [];
        const call = client.makeServerStreamRequest(
          receive.path,
          receive.requestSerialize,
          receive.responseDeserialize,
          {
            group,
            messageQueue: { topic, id: 0 },
            filterExpression: { type: 1, expression: "*" },
            batchSize: RECEIVE_BATCH,
            invisibleDuration: { seconds: 60 },
            longPollingTimeout: { seconds: 0 },
          },
          md,
        );
        call.on("data", (r: { message?: { systemProperties: Record<string, string> } }) => {
          const sys = r.message?.systemProperties;
          if (sys) handles.push({ messageId: sys.messageId, receiptHandle: sys.receiptHandle });
        });
        call.on("error", reject);
        call.on("end", () => {
          if (handles.length === 0) return resolve(0);
          client.makeUnaryRequest(
            ack.path,
            ack.requestSerialize,
            ack.responseDeserialize,
            { group, topic, entries: handles },
            md,
            (err, res?: { status: { code: number } }) =>
              err || res?.status.code !== 20000
                ? reject(err ?? new Error(JSON.stringify(res?.status)))
                : resolve(handles.length),
          );
        });
      }),
  };
}

say(`grpc bench on ${rt.name} ${rt.version}: ${seconds} s x ${rounds} rounds, c=${CONNECTIONS}`);
const dataDir = mkdtempSync(`${tmpdir()}/mq-grpc-bench-`);
const bodyFile = `${dataDir}-body.bin`;
writeFileSync(bodyFile, "x".repeat(BODY_BYTES));
const broker = await startBroker(dataDir);
try {
  const mq = new MqClient({ baseUrl: broker.url });
  await mq.upsertTopic("bench", { readQueueNums: 8, writeQueueNums: 8 });
  for (const t of ["pop-grpc", "pop-http"]) {
    await mq.upsertTopic(t, { readQueueNums: 4, writeQueueNums: 4 });
  }
  await mq.upsertGroup("grpc-pop", { consumeFromWhere: "FIRST_OFFSET" });
  await mq.upsertGroup("http-pop", { consumeFromWhere: "FIRST_OFFSET" });
  // Warm both paths once, unrecorded.
  await grpcProduceRate(broker.grpc);
  await httpProduceRate(broker.url, bodyFile);
  const ratios: number[] = [];
  const grpcRates: number[] = [];
  const httpRates: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const h = await httpProduceRate(broker.url, bodyFile);
    const gr = await grpcProduceRate(broker.grpc);
    httpRates.push(h);
    grpcRates.push(gr);
    ratios.push(gr / h);
    say(
      `round ${i + 1}: http ${Math.round(h)}/s, grpc ${Math.round(gr)}/s, ratio ${
        (gr / h).toFixed(2)
      }`,
    );
  }
  await prefill(mq, "pop-grpc");
  await prefill(mq, "pop-http");
  const consumer = grpcConsumer(broker.grpc);
  const grpcPop = await drainRate(consumer.step);
  consumer.close();
  const httpPop = await drainRate(async () => {
    const got = await mq.receive("http-pop", {
      topic: "pop-http",
      max: RECEIVE_BATCH,
      invisibleMs: 60_000,
    });
    if (got.length === 0) return 0;
    await mq.ackBatch("http-pop", got.map((m) => m.receiptHandle));
    return got.length;
  });
  say(`receive+ack: grpc ${Math.round(grpcPop)} msgs/s, http ${Math.round(httpPop)} msgs/s`);
  const out = {
    bench: "grpc",
    runtime: `${rt.name} ${rt.version}`,
    seconds,
    rounds,
    connections: CONNECTIONS,
    grpc_connections: GRPC_CONNECTIONS,
    body_bytes: BODY_BYTES,
    grpc_produce_per_s: Math.round(median(grpcRates)),
    http_produce_per_s: Math.round(median(httpRates)),
    grpc_vs_http_produce_ratio: Number(median(ratios).toFixed(3)),
    grpc_receive_ack_msgs_per_s: Math.round(grpcPop),
    http_pop_receive_ack_msgs_per_s: Math.round(httpPop),
    grpc_vs_http_pop_ratio: Number((grpcPop / httpPop).toFixed(3)),
  };
  if (json) process.stdout.write(JSON.stringify(out) + "\n");
  else say(JSON.stringify(out, null, 2));
} finally {
  await broker.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(bodyFile, { force: true });
}
