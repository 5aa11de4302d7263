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
//   bun_serve_h2c_*      (Bun) Bun.serve's experimental h2c answering the same reply, 4 x 16;
//   bun_serve_trailers   whether it delivered response trailers (needed for gRPC: no, in
//                        1.4.5, so grpc-status rides in the headers and the figure is a
//                        ceiling, not a usable gRPC transport); h2_trailers: node:http2's
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
    target: () => Promise.resolve((h2.address() as AddressInfo).port),
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

// Bun only: Bun.serve's own HTTP/2 (h2c by prior knowledge, `http2: true`, experimental in
// 1.4.5) answering the same gRPC reply. A Response has no trailers, so grpc-status can only
// go in the headers (valid gRPC only for a reply without messages, "Trailers-Only"): the
// figure is what a native transport would start from if Bun gave it trailers.
// deno-lint-ignore no-explicit-any
const bun = (globalThis as any).Bun;
const h2c = bun?.serve({
  hostname: "127.0.0.1",
  port: 0,
  http2: true,
  async fetch(req: Request) {
    await req.arrayBuffer().catch(() => {});
    return new Response(REPLY as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": "application/grpc", "grpc-status": "0" },
      trailers: { "grpc-status": "0" }, // not in the Fetch API: does Bun send it?
    } as ResponseInit);
  },
});

/** Whether a gRPC-style call to `port` gets response trailers, and over HTTP/2. */
function trailersOf(port: number): Promise<{ h2: boolean; trailers: boolean }> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => resolve({ h2: false, trailers: false }));
    const req = session.request({
      ":method": "POST",
      ":path": "/apache.rocketmq.v2.MessagingService/SendMessage",
      "content-type": "application/grpc",
      te: "trailers",
    });
    let trailers = false, h2 = false;
    req.on("response", () => h2 = true);
    req.on("trailers", () => trailers = true);
    req.on("data", () => {});
    req.on("error", () => {});
    req.on("close", () => {
      session.close();
      resolve({ h2, trailers });
    });
    req.end(grpcFrame(new Uint8Array(8)));
  });
}

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
const h2cRun = () =>
  cpuOf(() =>
    runH2load({
      url: `http://127.0.0.1:${h2c.port}/apache.rocketmq.v2.MessagingService/SendMessage`,
      seconds,
      connections: 4,
      streams: 16,
      dataFile: `${dir}/grpc.bin`,
      headers: { "content-type": "application/grpc", te: "trailers" },
    })
  );
try {
  say(`h2 floor on ${rt.name} ${rt.version}: ${seconds} s x ${rounds} rounds`);
  const n: { perSecond: number; cpuUs: number }[] = [];
  const nodeCheck = await trailersOf(h2Port);
  const bunCheck = h2c ? await trailersOf(h2c.port) : undefined;
  if (h2c) await h2cRun();
  await grpcRun();
  await httpRun();
  const g: { perSecond: number; cpuUs: number }[] = [];
  const h: { perSecond: number; cpuUs: number }[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    h.push(await httpRun());
    g.push(await grpcRun());
    if (h2c) n.push(await h2cRun());
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
    h2_trailers: nodeCheck.trailers,
    ...(bunCheck
      ? {
        bun_serve_h2c: bunCheck.h2,
        bun_serve_trailers: bunCheck.trailers,
        bun_serve_h2c_calls_per_s: Math.round(median(n.map((x) => x.perSecond))),
        bun_serve_h2c_cpu_us_per_call: round(median(n.map((x) => x.cpuUs))),
        bun_serve_h2c_vs_h2_ratio: round(
          median(n.map((x) => x.perSecond)) / median(g.map((x) => x.perSecond)),
        ),
      }
      : {}),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  rmSync(dir, { recursive: true, force: true });
  await native.close({ force: true });
  h2c?.stop(true);
  await shield?.close();
  h2.close();
}
