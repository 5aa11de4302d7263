// gRPC front end benchmark, beside the HTTP API in the same run. Same file on Deno and Bun:
//   deno run -A bench/grpc/grpc_bench.ts [--json] [--seconds 5] [--rounds 3]
//   bun run bench/grpc/grpc_bench.ts [--json] [--seconds 5] [--rounds 3]
//   [--transport lean|grpc-js]  the broker's MQ_GRPC_TRANSPORT (default lean); the JSON
//                               names it as "transport"
//   [--produce-only]            skip receive+ack (their keys are null)
// It starts the broker (ASYNC_FLUSH, fresh temp folder, HTTP and gRPC on free ports) on
// the runtime it runs on. Figures:
//   grpc_vs_http_produce_ratio   single 1 KiB sends/s over gRPC (SendMessage, one message
//                                per call as the official clients send) over HTTP
//                                produces/s: the median of --rounds (3) alternating runs
//                                of --seconds. Load generator: h2load (bench/grpc/h2load.ts)
//                                for both, 64 calls in flight: gRPC as --grpc-connections
//                                (4) h2c connections x --grpc-streams (16) streams, as
//                                clients multiplex; HTTP/1.1 over 64 connections. Without
//                                h2load (or with --node-load) it says so and falls back to
//                                the Node.js generators (h2_load.mjs, 64 calls over 64
//                                connections, and autocannon), whose client CPU per gRPC
//                                call is 10-20x h2load's and competes with the broker.
//   *_server_cpu_us_per_call     the broker process's CPU (Linux /proc) per call, and
//   *_client_cpu_us_per_call     h2load's: on a shared machine the CPU per call compares
//                                better than the rates; grpc_vs_http_cpu_ratio is HTTP's
//                                server CPU per produce over gRPC's per send
//   grpc_receive_ack_msgs_per_s  ReceiveMessage (batch 32) + AckMessage (one entry per
//                                message, as SimpleConsumer acks) from 4 loops in this
//                                process, over a queue filled beforehand
//   http_pop_receive_ack_msgs_per_s  the same over HTTP POP: receive (max 32) + ack batch
//   *_pop_*cpu_us_per_msg / grpc_receive_*  broker (server) and consumer (client: this
//                                process) CPU per message received and acked: grpc-js's
//                                client decodes every message and costs several times the
//                                HTTP client's, on the same 2 cores (bench/README.md)
// bench/grpc/h2_floor.ts measures the runtime's own node:http2 floor. The load generators
// share the 2 cores with the broker; the ratios hold on a noisy machine better than the
// absolute figures (bench/README.md).
import process from "node:process";
import { Buffer } from "node:buffer";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as grpc from "@grpc/grpc-js";
import { MqClient } from "../../client/mod.ts";
import { loadMessagingService } from "../../functions/grpc/proto.ts";
import { commandLine, median, round, runNodeJson, runtimeInfo, say } from "../support.ts";
import { type ServerChild, startBroker } from "../broker_process.ts";
import { cpuSecondsOf, grpcFrame, hasH2load, runH2load } from "./h2load.ts";

const flags = commandLine();
const json = flags.has("json");
const seconds = flags.number("seconds", 5);
const rounds = flags.number("rounds", 3);
const CONNECTIONS = 64;
const H2LOAD = !flags.has("node-load") && hasH2load();
/** --grpc-connections N x --grpc-streams M: the gRPC calls in flight (h2load; real clients
 * multiplex over one connection per endpoint). The Node.js fallback: 64 over 64. */
const GRPC_CONNECTIONS = flags.number("grpc-connections", H2LOAD ? 4 : CONNECTIONS);
const GRPC_STREAMS = flags.number("grpc-streams", H2LOAD ? 16 : 1);
const BODY_BYTES = 1024;
const RECEIVE_LOOPS = 4;
const RECEIVE_BATCH = 32;
const PREFILL = 40_000;
const rt = runtimeInfo();

type Broker = ServerChild & { grpc: string };

/** --transport grpc-js|lean: the broker's MQ_GRPC_TRANSPORT (docs/grpc.md). */
const TRANSPORT = flags.string("transport", "lean");
/** --produce-only: skip receive+ack (the lean transport serves unary RPCs only). */
const PRODUCE_ONLY = flags.has("produce-only");

async function startGrpcBroker(dataDir: string): Promise<Broker> {
  const broker = await startBroker(dataDir, { MQ_GRPC_TRANSPORT: TRANSPORT });
  return { ...broker, grpc: String(broker.listening.grpc) };
}

/** Runs a Node.js load process and returns its JSON line. */
function nodeJson(args: string[]): Promise<{ requests: number; errors: number; non2xx?: number }> {
  return runNodeJson(args);
}

interface Rate {
  perSecond: number;
  serverCpuUs: number;
  clientCpuUs: number;
}

async function httpProduceRate(broker: Broker, bodyFile: string): Promise<Rate> {
  const url = `${broker.url}/v1/topics/bench/messages`;
  if (H2LOAD) {
    const r = await runH2load({
      url,
      seconds,
      connections: CONNECTIONS,
      streams: 1,
      dataFile: bodyFile,
      h1: true,
      serverPid: broker.pid,
    });
    if (r.failed > 0) throw new Error(`h2load: ${r.failed} failed produces`);
    return {
      perSecond: r.perSecond,
      serverCpuUs: r.serverCpuUsPerCall,
      clientCpuUs: r.clientCpuUsPerCall,
    };
  }
  const cli = new URL("../../node_modules/autocannon/autocannon.js", import.meta.url).pathname;
  const cpu = cpuSecondsOf(broker.pid);
  const r = await nodeJson([
    cli,
    ...["-c", String(CONNECTIONS), "-d", String(seconds), "-m", "POST", "-i", bodyFile, "-j"],
    url,
  ]) as unknown as { requests: { average: number }; non2xx: number; errors: number };
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`autocannon: ${r.non2xx} non-2xx`);
  const calls = r.requests.average * seconds;
  const serverCpuUs = (cpuSecondsOf(broker.pid) - cpu) * 1e6 / calls;
  return { perSecond: r.requests.average, serverCpuUs, clientCpuUs: NaN };
}

const sendService = () => {
  const service = loadMessagingService();
  return Object.values(service).find((d) => d.originalName === "sendMessage")!;
};

/** The SendMessage request h2load repeats: one 1 KiB message to topic bench. (Every copy
 * carries the same message id: the broker stores each, as it does a client's retries.) */
function sendRequestFile(path: string): void {
  const request = {
    messages: [{
      topic: { name: "bench" },
      systemProperties: {
        messageId: "01" + "0".repeat(32),
        messageType: 1,
        bodyEncoding: 1,
        bornHost: "bench",
      },
      body: new Uint8Array(BODY_BYTES).fill(120),
    }],
  };
  writeFileSync(path, grpcFrame(sendService().requestSerialize(request)));
}

/** h2load counts HTTP statuses only: one call first checks that this request gets Code OK. */
function checkSend(address: string): Promise<void> {
  const send = sendService();
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("x-mq-client-id", `bench@${process.pid}`);
  const request = send.requestDeserialize(
    Buffer.from(readFileSync(sendFile)).subarray(5),
  );
  return new Promise<void>((resolve, reject) =>
    client.makeUnaryRequest(
      send.path,
      send.requestSerialize,
      send.responseDeserialize,
      request,
      md,
      (err, res?: { status: { code: number } }) => {
        client.close();
        err || res?.status.code !== 20000
          ? reject(err ?? new Error(`SendMessage: ${JSON.stringify(res?.status)}`))
          : resolve();
      },
    )
  );
}

async function grpcProduceRate(broker: Broker): Promise<Rate> {
  if (H2LOAD) {
    const r = await runH2load({
      url: `http://${broker.grpc}${sendService().path}`,
      seconds,
      connections: GRPC_CONNECTIONS,
      streams: GRPC_STREAMS,
      dataFile: sendFile,
      headers: {
        "content-type": "application/grpc",
        te: "trailers",
        "x-mq-client-id": `bench@${process.pid}`,
      },
      serverPid: broker.pid,
    });
    if (r.failed > 0) throw new Error(`h2load: ${r.failed} failed sends`);
    return {
      perSecond: r.perSecond,
      serverCpuUs: r.serverCpuUsPerCall,
      clientCpuUs: r.clientCpuUsPerCall,
    };
  }
  const script = new URL("./h2_load.mjs", import.meta.url).pathname;
  const cpu = cpuSecondsOf(broker.pid);
  const r = await nodeJson([
    script,
    broker.grpc,
    "bench",
    String(CONNECTIONS),
    String(seconds),
    String(BODY_BYTES),
    String(GRPC_CONNECTIONS),
  ]);
  if (r.errors > 0) throw new Error(`h2_load: ${r.errors} failed sends`);
  const serverCpuUs = (cpuSecondsOf(broker.pid) - cpu) * 1e6 / (r.requests * seconds);
  return { perSecond: r.requests, serverCpuUs, clientCpuUs: NaN };
}

async function prefill(mq: MqClient, topic: string) {
  const body = "x".repeat(BODY_BYTES);
  for (let i = 0; i < PREFILL; i += 500) {
    await mq.produceBatch(topic, Array.from({ length: 500 }, () => ({ body })));
  }
}

interface DrainRate {
  perSecond: number;
  /** The broker's CPU per message received and acked. */
  serverCpuUs: number;
  /** This process's (the consumer's) CPU per message. */
  clientCpuUs: number;
}

/** Messages/s received and acked by `loops` loops of `step` for `seconds`, and the CPU
 * per message of the broker and of this process (the consumer loops run here). */
async function drainRate(brokerPid: number, step: () => Promise<number>): Promise<DrainRate> {
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  const serverCpu = cpuSecondsOf(brokerPid);
  const clientCpu = process.cpuUsage();
  let n = 0;
  await Promise.all(Array.from({ length: RECEIVE_LOOPS }, async () => {
    while (performance.now() < until) {
      const got = await step();
      if (got === 0) break; // drained
      n += got;
    }
  }));
  const client = process.cpuUsage(clientCpu);
  return {
    perSecond: n / ((performance.now() - started) / 1000),
    serverCpuUs: (cpuSecondsOf(brokerPid) - serverCpu) * 1e6 / n,
    clientCpuUs: (client.user + client.system) / n,
  };
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
if (!H2LOAD) {
  say(
    flags.has("node-load")
      ? "load: Node.js generators (--node-load): h2_load.mjs and autocannon"
      : "load: h2load not found (apt-get install nghttp2-client); falling back to the Node.js " +
        "generators h2_load.mjs and autocannon, whose client CPU per gRPC call competes with " +
        "the broker: the ratio is then mostly the client's",
  );
}
const dataDir = mkdtempSync(`${tmpdir()}/mq-grpc-bench-`);
const bodyFile = `${dataDir}-body.bin`;
const sendFile = `${dataDir}-send.bin`;
writeFileSync(bodyFile, "x".repeat(BODY_BYTES));
sendRequestFile(sendFile);
const broker = await startGrpcBroker(dataDir);
try {
  const mq = new MqClient({ baseUrl: broker.url });
  await mq.upsertTopic("bench", { readQueueNums: 8, writeQueueNums: 8 });
  for (const t of ["pop-grpc", "pop-http"]) {
    await mq.upsertTopic(t, { readQueueNums: 4, writeQueueNums: 4 });
  }
  await mq.upsertGroup("grpc-pop", { consumeFromWhere: "FIRST_OFFSET" });
  await mq.upsertGroup("http-pop", { consumeFromWhere: "FIRST_OFFSET" });
  await checkSend(broker.grpc);
  // Warm both paths once, unrecorded.
  await grpcProduceRate(broker);
  await httpProduceRate(broker, bodyFile);
  const ratios: number[] = [];
  const grpcRates: Rate[] = [];
  const httpRates: Rate[] = [];
  for (let i = 0; i < rounds; i++) {
    const h = await httpProduceRate(broker, bodyFile);
    const gr = await grpcProduceRate(broker);
    httpRates.push(h);
    grpcRates.push(gr);
    ratios.push(gr.perSecond / h.perSecond);
    say(
      `round ${i + 1}: http ${Math.round(h.perSecond)}/s (${Math.round(h.serverCpuUs)} us cpu), ` +
        `grpc ${Math.round(gr.perSecond)}/s (${Math.round(gr.serverCpuUs)} us cpu), ratio ${
          (gr.perSecond / h.perSecond).toFixed(2)
        }`,
    );
  }
  const none = { perSecond: NaN, serverCpuUs: NaN, clientCpuUs: NaN };
  if (!PRODUCE_ONLY) {
    await prefill(mq, "pop-grpc");
    await prefill(mq, "pop-http");
  }
  const consumer = PRODUCE_ONLY ? undefined : grpcConsumer(broker.grpc);
  const grpcPop = consumer ? await drainRate(broker.pid, consumer.step) : none;
  consumer?.close();
  const httpPop = PRODUCE_ONLY ? none : await drainRate(broker.pid, async () => {
    const got = await mq.receive("http-pop", {
      topic: "pop-http",
      max: RECEIVE_BATCH,
      invisibleMs: 60_000,
    });
    if (got.length === 0) return 0;
    await mq.ackBatch("http-pop", got.map((m) => m.receiptHandle));
    return got.length;
  });
  say(
    `receive+ack: grpc ${Math.round(grpcPop.perSecond)} msgs/s (${
      Math.round(grpcPop.serverCpuUs)
    } us broker cpu, ${Math.round(grpcPop.clientCpuUs)} us consumer cpu per msg), http ${
      Math.round(httpPop.perSecond)
    } msgs/s (${Math.round(httpPop.serverCpuUs)} us, ${Math.round(httpPop.clientCpuUs)} us)`,
  );
  const out = {
    transport: TRANSPORT,
    bench: "grpc",
    runtime: `${rt.name} ${rt.version}`,
    seconds,
    rounds,
    load: H2LOAD ? "h2load" : "node",
    connections: CONNECTIONS,
    grpc_connections: GRPC_CONNECTIONS,
    grpc_streams: GRPC_STREAMS,
    body_bytes: BODY_BYTES,
    grpc_produce_per_s: Math.round(median(grpcRates.map((r) => r.perSecond))),
    http_produce_per_s: Math.round(median(httpRates.map((r) => r.perSecond))),
    grpc_vs_http_produce_ratio: Number(median(ratios).toFixed(3)),
    grpc_server_cpu_us_per_call: round(median(grpcRates.map((r) => r.serverCpuUs))),
    http_server_cpu_us_per_call: round(median(httpRates.map((r) => r.serverCpuUs))),
    grpc_vs_http_cpu_ratio: round(
      median(httpRates.map((r) => r.serverCpuUs)) / median(grpcRates.map((r) => r.serverCpuUs)),
    ),
    grpc_client_cpu_us_per_call: round(median(grpcRates.map((r) => r.clientCpuUs))),
    http_client_cpu_us_per_call: round(median(httpRates.map((r) => r.clientCpuUs))),
    grpc_receive_ack_msgs_per_s: Math.round(grpcPop.perSecond),
    http_pop_receive_ack_msgs_per_s: Math.round(httpPop.perSecond),
    grpc_vs_http_pop_ratio: Number((grpcPop.perSecond / httpPop.perSecond).toFixed(3)),
    grpc_receive_server_cpu_us_per_msg: round(grpcPop.serverCpuUs),
    http_pop_server_cpu_us_per_msg: round(httpPop.serverCpuUs),
    grpc_vs_http_pop_cpu_ratio: round(httpPop.serverCpuUs / grpcPop.serverCpuUs),
    grpc_receive_client_cpu_us_per_msg: round(grpcPop.clientCpuUs),
    http_pop_client_cpu_us_per_msg: round(httpPop.clientCpuUs),
  };
  if (json) process.stdout.write(JSON.stringify(out) + "\n");
  else say(JSON.stringify(out, null, 2));
} finally {
  await broker.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(bodyFile, { force: true });
  rmSync(sendFile, { force: true });
}
