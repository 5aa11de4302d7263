// h2load (Debian's nghttp2-client; scripts/install.sh installs it as root on Debian) as the
// load generator of the gRPC benches: a C client that costs a few microseconds of CPU per
// call, so on a shared 2-core machine the figures are the server's, not the client's (the
// Node.js generators cost 10-20x more per gRPC call; bench/README.md). gRPC unary calls are
// POSTs with `content-type: application/grpc`, `te: trailers` and a data file holding the
// 5-byte-prefixed request, over h2c, `streams` calls in flight on each of `connections`
// (real RocketMQ clients multiplex one connection per endpoint). HTTP/1.1 with `h1`.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

export interface H2loadRun {
  url: string;
  seconds: number;
  connections: number;
  /** Requests in flight per connection (-m): HTTP/2 streams, or HTTP/1.1 pipelining. */
  streams: number;
  dataFile: string;
  headers?: Record<string, string>;
  h1?: boolean;
  /** A process whose CPU time (utime + stime, Linux /proc) is measured over the run. */
  serverPid?: number;
}

export interface H2loadResult {
  perSecond: number;
  succeeded: number;
  failed: number;
  /** CPU microseconds per successful request; NaN when not measurable. */
  clientCpuUsPerCall: number;
  serverCpuUsPerCall: number;
}

/** Whether h2load is on PATH. */
export function hasH2load(): boolean {
  return spawnSync("h2load", ["--version"], { stdio: "ignore" }).status === 0;
}

/** The request frame of a gRPC unary call: flag 0, big-endian length, the message. */
export function grpcFrame(message: Uint8Array): Uint8Array {
  const frame = new Uint8Array(5 + message.length);
  new DataView(frame.buffer).setUint32(1, message.length);
  frame.set(message, 5);
  return frame;
}

/** CPU seconds (user + system) of a process so far, from /proc; NaN elsewhere. */
export function cpuSecondsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/** `times`' line "0m1.230000s 0m0.450000s" as seconds (user + system). */
function timesSeconds(line: string): number {
  return line.trim().split(/\s+/).map((t) => {
    const m = /^(\d+)m([\d.]+)s$/.exec(t);
    return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
  }).reduce((a, b) => a + b, 0);
}

export function runH2load(run: H2loadRun): Promise<H2loadResult> {
  const args = [
    ...(run.h1 ? ["--h1"] : []),
    ...["-D", String(run.seconds), "-c", String(run.connections), "-m", String(run.streams)],
    ...["-d", run.dataFile],
    ...Object.entries(run.headers ?? {}).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
    run.url,
  ];
  // `times` after h2load prints the shell's children's CPU time: h2load's own.
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const child = spawn("sh", ["-c", `h2load ${quoted}; times`], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const serverBefore = run.serverPid ? cpuSecondsOf(run.serverPid) : NaN;
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => out += c);
    child.on("error", reject);
    child.on("close", () => {
      const serverCpu = run.serverPid ? cpuSecondsOf(run.serverPid) - serverBefore : NaN;
      const finished = /finished in ([\d.]+)s, ([\d.]+) req\/s/.exec(out);
      const counts = /(\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
      if (!finished || !counts) return reject(new Error(`h2load said: ${out.slice(-400)}`));
      const succeeded = Number(counts[1]);
      const lines = out.trim().split("\n");
      const client = timesSeconds(lines[lines.length - 1]);
      resolve({
        perSecond: Number(finished[2]),
        succeeded,
        failed: Number(counts[2]) + Number(counts[3]),
        clientCpuUsPerCall: (client * 1e6) / succeeded,
        serverCpuUsPerCall: (serverCpu * 1e6) / succeeded,
      });
    });
  });
}
