// A real broker process (Deno or Bun) on port 0 with its own data folder.
import { rmSync } from "node:fs";
import { MqClient } from "../../client/mod.ts";
import {
  type ChildRun,
  type RuntimeName,
  startChild,
  startTaskV8Flags,
  tempDir,
} from "./process.ts";

export { tempDir };

export interface BrokerProcess extends AsyncDisposable {
  runtime: RuntimeName;
  url: string;
  /** host:port of the RocketMQ 5 gRPC front end, when it is on. */
  grpc?: string;
  dataDir: string;
  child: ChildRun;
  client: MqClient;
  /** SIGTERM and wait for a clean exit (code 0). */
  stop(): Promise<void>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
}

/** A functions process (functions/main.ts) finding brokers through the KV route table. */
export interface FunctionsProcess extends AsyncDisposable {
  url: string;
  grpc?: string;
  child: ChildRun;
  client: MqClient;
}

/** Starts functions/main.ts on port 0 against the KV Connect host `kvUrl`. */
export async function startFunctions(
  runtime: RuntimeName,
  options: { kvUrl: string; kvToken: string; env?: Record<string, string> },
): Promise<FunctionsProcess> {
  const child = startChild(runtime, "functions/main.ts", [], {
    PORT: "0",
    MQ_GRPC_PORT: "0",
    MQ_KV: options.kvUrl,
    DENO_KV_ACCESS_TOKEN: options.kvToken,
    MQ_ROUTE_CACHE_MS: "60000",
    MQ_LOG_LEVEL: "warn",
    ...options.env,
  });
  try {
    const { url, grpc } = await child.waitForJson<{ url: string; grpc?: string }>(
      "functions listening",
      (v) => v.event === "listening",
    );
    return {
      url,
      grpc,
      child,
      client: new MqClient({ baseUrl: url, retries: 0 }),
      [Symbol.asyncDispose]: () => child[Symbol.asyncDispose](),
    };
  } catch (err) {
    await child[Symbol.asyncDispose]();
    throw err;
  }
}

export async function startBroker(
  runtime: RuntimeName,
  options: {
    dataDir?: string;
    env?: Record<string, string>;
    args?: string[];
    token?: string;
    /** On Deno, the V8 flags `deno task start` passes (deno.json). */
    startTaskFlags?: boolean;
  } = {},
): Promise<BrokerProcess> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? tempDir(`broker-${runtime}`);
  const child = startChild(runtime, "runtime/main.ts", options.args ?? [], {
    PORT: "0",
    MQ_GRPC_PORT: "0",
    DATA_DIR: dataDir,
    MQ_LOG_LEVEL: "warn",
    ...options.env,
  }, { denoFlags: options.startTaskFlags ? [startTaskV8Flags()] : [] });
  let listening: { url: string; grpc?: string };
  try {
    listening = await child.waitForJson<{ url: string; grpc?: string }>(
      "listening line",
      (v) => v.event === "listening",
      60_000,
    );
  } catch (err) {
    child.kill("SIGKILL");
    await child.exited;
    throw err;
  }
  // No retries: tests see each refusal as the broker answered it.
  const client = new MqClient({ baseUrl: listening.url, token: options.token, retries: 0 });
  const proc: BrokerProcess = {
    runtime,
    url: listening.url,
    grpc: listening.grpc,
    dataDir,
    child,
    client,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
      // Deno's node:child_process reports a signal exit for any child sent a signal, even
      // one that exits 0, so a clean stop is judged by the broker's last line instead.
      const clean = child.lines.some((l) => l.includes('"event":"stopped"'));
      if (!clean) {
        throw new Error(
          `broker did not stop cleanly; stderr: ${child.stderr.join("").slice(-2000)}`,
        );
      }
    },
    async kill() {
      child.kill("SIGKILL");
      await child.exited;
    },
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.exited;
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return proc;
}
