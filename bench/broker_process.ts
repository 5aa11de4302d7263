// A server script (the broker, a receiver) as a child process on the bench's own runtime:
// Deno children get deno.json's start flags, so they run as `deno task start` runs them.
// Resolves with its "listening" line once it prints one; stop() sends SIGTERM and waits for
// the exit ("exit", not "close": a data folder removed next is only safe once the process
// is done writing to it).
import { spawn } from "node:child_process";
import process from "node:process";
import { brokerDenoV8Flags } from "./support.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

export interface ServerChild {
  url: string;
  /** The whole listening line (grpc, remoting, namesrv addresses when they are on). */
  listening: Record<string, string | number | undefined>;
  pid: number;
  stop(): Promise<void>;
}

/** Starts `script` with `env` added to this process's environment. */
export function startServer(script: string, env: Record<string, string>): Promise<ServerChild> {
  const argv = g.Deno ? ["run", brokerDenoV8Flags(), "-A", script] : ["run", script];
  const child = spawn(process.execPath, argv, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((done) => child.on("exit", () => done()));
  return new Promise((resolve, reject) => {
    let buf = "";
    let up = false;
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      if (up) return;
      buf += chunk;
      const line = buf.split("\n").find((l) => l.includes('"listening"'));
      if (!line) return;
      up = true;
      const listening = JSON.parse(line);
      resolve({
        url: listening.url,
        listening,
        pid: child.pid!,
        stop: () => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          return exited;
        },
      });
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (!up) reject(new Error(`${script} exited early (${code})`));
    });
  });
}

/** A bench broker's settings: free ports (HTTP, gRPC, NameServer, remoting), its own data
 * folder, ASYNC_FLUSH and errors-only logging. */
export function brokerEnv(dataDir: string): Record<string, string> {
  return {
    PORT: "0",
    MQ_GRPC_PORT: "0",
    MQ_NAMESRV_PORT: "0",
    MQ_REMOTING_PORT: "0",
    DATA_DIR: dataDir,
    MQ_LOG_LEVEL: "error",
    MQ_FLUSH_DISK_TYPE: "ASYNC_FLUSH",
  };
}

/** runtime/main.ts with brokerEnv(dataDir) plus `env`. */
export function startBroker(dataDir: string, env: Record<string, string> = {}) {
  return startServer("runtime/main.ts", { ...brokerEnv(dataDir), ...env });
}
