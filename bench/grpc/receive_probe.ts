// gRPC ReceiveMessage+AckMessage against HTTP POP receive+ack, the broker's and this
// process's (the consumer's) CPU per message and the time per receive and per ack, for
// comparing builds (bench/README.md, "gRPC receive"):
//   bun run bench/grpc/receive_probe.ts [--seconds 3] [--loops 4] [--rounds 2]
//     [--prefill 40000] [--window BYTES] [--grpc-only]
//     [--url http://… --grpc host:port --pid N]   (a broker started elsewhere, e.g. from
//                                                  another checkout, to alternate builds)
// --window sets grpc-js's client flow-control window (default HTTP/2's 65 535 bytes, as
// rocketmq-client-nodejs). Prints one line per run.
import process from "node:process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as grpc from "@grpc/grpc-js";
import { MqClient } from "../../client/mod.ts";
import { loadMessagingService } from "../../functions/grpc/proto.ts";
import { commandLine, say } from "../support.ts";
import { startBroker } from "../broker_process.ts";
import { cpuSecondsOf } from "./h2load.ts";

const flags = commandLine();
const seconds = flags.number("seconds", 3);
const LOOPS = flags.number("loops", 4);
const BATCH = 32;
const dataDir = mkdtempSync(`${tmpdir()}/mq-grpc-probe-`);
const external = flags.string("url", "");
const broker = external
  ? {
    url: external,
    listening: { grpc: flags.string("grpc", "") },
    pid: flags.number("pid", 0),
    stop: async () => {},
  }
  : await startBroker(dataDir);
const mq = new MqClient({ baseUrl: broker.url });
const body = "x".repeat(1024);
for (const t of ["pg", "ph"]) {
  await mq.upsertTopic(t, { readQueueNums: 4, writeQueueNums: 4 });
  for (let i = 0; i < flags.number("prefill", 40_000); i += 500) {
    await mq.produceBatch(t, Array.from({ length: 500 }, () => ({ body })));
  }
}
await mq.upsertGroup("gg", { consumeFromWhere: "FIRST_OFFSET" });
await mq.upsertGroup("hg", { consumeFromWhere: "FIRST_OFFSET" });

const service = loadMessagingService();
const window = flags.number("window", 65535);
const client = new grpc.Client(
  String(broker.listening.grpc),
  grpc.credentials.createInsecure(),
  window > 65535 ? { "grpc-node.flow_control_window": window } : {},
);
const md = new grpc.Metadata();
md.set("x-mq-client-id", `probe@${process.pid}`);
const def = (name: string) => Object.values(service).find((d) => d.originalName === name)!;
const rcv = def("receiveMessage");
const ack = def("ackMessage");
let tRecv = 0, tAck = 0;
function grpcStep(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const handles: { messageId: string; receiptHandle: string }[] = [];
    const call = client.makeServerStreamRequest(
      rcv.path,
      rcv.requestSerialize,
      rcv.responseDeserialize,
      {
        group: { name: "gg" },
        messageQueue: { topic: { name: "pg" }, id: 0 },
        filterExpression: { type: 1, expression: "*" },
        batchSize: BATCH,
        invisibleDuration: { seconds: 60 },
        longPollingTimeout: { seconds: 0 },
      },
      md,
    );
    // deno-lint-ignore no-explicit-any
    call.on("data", (r: any) => {
      const sys = r.message?.systemProperties;
      if (sys) handles.push({ messageId: sys.messageId, receiptHandle: sys.receiptHandle });
    });
    call.on("error", reject);
    call.on("end", () => {
      const t1 = performance.now();
      tRecv += t1 - t0;
      if (handles.length === 0) return resolve(0);
      client.makeUnaryRequest(
        ack.path,
        ack.requestSerialize,
        ack.responseDeserialize,
        {
          group: { name: "gg" },
          topic: { name: "pg" },
          entries: handles,
        },
        md,
        (err, res?: { status: { code: number } }) => {
          tAck += performance.now() - t1;
          err || res?.status.code !== 20000
            ? reject(err ?? new Error(JSON.stringify(res?.status)))
            : resolve(handles.length);
        },
      );
    });
  });
}
async function httpStep(): Promise<number> {
  const t0 = performance.now();
  const got = await mq.receive("hg", { topic: "ph", max: BATCH, invisibleMs: 60_000 });
  const t1 = performance.now();
  tRecv += t1 - t0;
  if (got.length === 0) return 0;
  await mq.ackBatch("hg", got.map((m) => m.receiptHandle));
  tAck += performance.now() - t1;
  return got.length;
}
async function run(name: string, step: () => Promise<number>) {
  tRecv = tAck = 0;
  const c0 = process.cpuUsage();
  const b0 = cpuSecondsOf(broker.pid);
  const started = performance.now();
  const until = started + seconds * 1000;
  let n = 0, steps = 0;
  await Promise.all(Array.from({ length: LOOPS }, async () => {
    while (performance.now() < until) {
      const got = await step();
      if (got === 0) break;
      n += got;
      steps++;
    }
  }));
  const el = (performance.now() - started) / 1000;
  const c = process.cpuUsage(c0);
  const b = cpuSecondsOf(broker.pid) - b0;
  say(
    `${name}: ${Math.round(n / el)} msgs/s, broker ${(b * 1e6 / n).toFixed(1)} us/msg, client ${
      ((c.user + c.system) / n).toFixed(1)
    } us/msg, recv ${(tRecv / steps).toFixed(2)} ms, ack ${(tAck / steps).toFixed(2)} ms per step`,
  );
}
try {
  for (let r = 0; r < flags.number("rounds", 2); r++) {
    await run("grpc", grpcStep);
    if (!flags.has("grpc-only")) await run("http", httpStep);
  }
} finally {
  client.close();
  await broker.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
