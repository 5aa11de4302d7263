// The floor under the gRPC front end: what one call costs through this runtime's node:http2
// server alone, beside its native HTTP server, both answering a fixed reply, no broker.
//   deno run -A bench/grpc/h2_floor.ts [--json] [--seconds 5] [--rounds 3]
//   bun run bench/grpc/h2_floor.ts [--json] [--seconds 5] [--rounds 3]
// Both servers run in this process; h2load (bench/grpc/h2load.ts) loads them alternately:
//   h2_calls_per_s       a bare node:http2 server reading the request and answering a
//                        gRPC reply (headers, one 5-byte-prefixed message, grpc-status
//                        trailers) as grpc-js does; h2c, 4 connections x 16 streams
//   native_http_per_s    the runtime's native server (Deno.serve / Bun.serve) reading a
//                        1 KiB POST body and answering a small JSON body; HTTP/1.1, 64
//                        connections (as the HTTP produce bench)
//                        (on Deno behind functions/grpc/goaway_shield.ts, as the broker)
//   h2_vs_native_ratio   the best ratio any gRPC server on node:http2 can reach here
//   *_cpu_us_per_call    this process's CPU per call (process.cpuUsage)
// grpc_bench.ts's grpc_vs_http_produce_ratio, set against this one, tells the broker's and
// grpc-js's share from the runtime's (bench/README.md, "gRPC front end").
import http2 from "node:http2";
import process from "node:process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import type { AddressInfo } from "node:net";
import { startGoawayShield } from "../../functions/grpc/goaway_shield.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";
import { commandLine, median, round, runtimeInfo, say } from "../support.ts";
import { grpcFrame, hasH2load, runH2load } from "./h2load.ts";

const flags = commandLine();
const seconds = flags.number("seconds", 5);
const rounds = flags.number("rounds", 3);
const rt = runtimeInfo();
if (!hasH2load()) {
  say("h2_floor: skipped, h2load not found (apt-get install nghttp2-client)");
  process.exit(0);
}

// A SendMessageResponse-sized reply (status OK + one entry), as bytes: its content does not
// matter to the transport.
const REPLY = grpcFrame(new Uint8Array(64).fill(0x0a));
const h2 = http2.createServer();
h2.on("session", (session) => session.on("error", () => {}));
h2.on("stream", (stream: http2.ServerHttp2Stream) => {
  stream.on("error", () => {});
  stream.on("data", () => {});
  stream.on("end", () => {
    if (stream.destroyed) return; // h2load cut it at the end of a run
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
      waitForTrailers: true,
    });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(REPLY);
  });
});
await new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve));
// On Deno behind the GOAWAY shield, as the broker serves gRPC there (h2load ends its
// connections with GOAWAY, which Deno's node:http2 server does not survive).
const shield = rt.name === "deno"
  ? await startGoawayShield({
    host: "127.0.0.1",
    port: 0,
    target: (h2.address() as AddressInfo).port,
  })
  : undefined;
const h2Port = shield?.port ?? (h2.address() as AddressInfo).port;
const platform = await pickPlatform();
const native = await platform.serve(
  { hostname: "127.0.0.1", port: 0, maxRequestBodyBytes: 1 << 20 },
  async (req) => {
    await req.arrayBuffer().catch(() => {}); // h2load cut it at the end of a run
    return Response.json({ messageId: "0".repeat(32), queueId: 0, queueOffset: 0 });
  },
);

const dir = mkdtempSync(`${tmpdir()}/mq-h2-floor-`);
writeFileSync(`${dir}/grpc.bin`, grpcFrame(new Uint8Array(1088).fill(0x78)));
writeFileSync(`${dir}/body.bin`, "x".repeat(1024));
const cpuOf = async (fn: () => Promise<{ succeeded: number; perSecond: number }>) => {
  const before = process.cpuUsage();
  const r = await fn();
  const used = process.cpuUsage(before);
  return { perSecond: r.perSecond, cpuUs: (used.user + used.system) / r.succeeded };
};
const grpcRun = () =>
  cpuOf(() =>
    runH2load({
      url: `http://127.0.0.1:${h2Port}/apache.rocketmq.v2.MessagingService/SendMessage`,
      seconds,
      connections: 4,
      streams: 16,
      dataFile: `${dir}/grpc.bin`,
      headers: { "content-type": "application/grpc", te: "trailers" },
    })
  );
const httpRun = () =>
  cpuOf(() =>
    runH2load({
      url: `http://127.0.0.1:${native.port}/v1/topics/bench/messages`,
      seconds,
      connections: 64,
      streams: 1,
      dataFile: `${dir}/body.bin`,
      h1: true,
    })
  );
try {
  say(`h2 floor on ${rt.name} ${rt.version}: ${seconds} s x ${rounds} rounds`);
  await grpcRun();
  await httpRun();
  const g: { perSecond: number; cpuUs: number }[] = [];
  const h: { perSecond: number; cpuUs: number }[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    h.push(await httpRun());
    g.push(await grpcRun());
    ratios.push(g[i].perSecond / h[i].perSecond);
    say(
      `round ${i + 1}: native ${Math.round(h[i].perSecond)}/s, h2 ${Math.round(g[i].perSecond)}/s`,
    );
  }
  const out = {
    bench: "h2_floor",
    runtime: `${rt.name} ${rt.version}`,
    seconds,
    rounds,
    h2_calls_per_s: Math.round(median(g.map((x) => x.perSecond))),
    native_http_per_s: Math.round(median(h.map((x) => x.perSecond))),
    h2_vs_native_ratio: round(median(ratios)),
    h2_cpu_us_per_call: round(median(g.map((x) => x.cpuUs))),
    native_cpu_us_per_call: round(median(h.map((x) => x.cpuUs))),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  rmSync(dir, { recursive: true, force: true });
  await native.close({ force: true });
  await shield?.close();
  h2.close();
}
