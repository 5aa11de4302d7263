// The coordination store of a local cluster (issue #26): where brokers register their
// routes and replicated groups hold their lease. Three kinds:
//   etcd     Debian's etcd-server binary (the default): etcd://127.0.0.1:port
//   denokv   a self-hosted denokv binary on PATH (KV Connect over HTTP, SQLite underneath)
//   kv-host  tools/kv_host, the in-memory KV Connect host: a TEST FIXTURE (data lives in its
//            process only), allowed for tests and trying things out, never for deployments
// Each starts on free loopback ports with a temp data dir and is stopped by PID.
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { connect } from "node:net";
import process from "node:process";
import { etcdBinary, startEtcd } from "./etcd.ts";
import { stablePort } from "./ports.ts";
import { ChildRun, type SpawnOptions, startChild, tempDir } from "./process.ts";

export type CoordinationKind = "etcd" | "denokv" | "kv-host";
export const COORDINATION_KINDS: CoordinationKind[] = ["etcd", "denokv", "kv-host"];

/** A store the launcher started: brokers and functions get MQ_KV=url and the token. */
export interface Coordination {
  kind: CoordinationKind;
  /** MQ_KV for brokers and functions. */
  url: string;
  /** DENO_KV_ACCESS_TOKEN (KV Connect); unused by etcd. */
  token: string;
  pid: number;
  /** SIGTERM, SIGKILL after `graceMs`; removes its data. */
  stop(graceMs?: number): Promise<void>;
}

/** Thrown when the store's binary is missing: the launcher exits 2 with this message. */
export class MissingBinary extends Error {}

/** The token a local cluster's KV Connect store takes (loopback only). */
export const LOCAL_KV_TOKEN = "edgemq-local-cluster-token";

/** The denokv binary on PATH (DENOKV_BIN overrides), or undefined. */
export function denokvBinary(): string | undefined {
  if (process.env.DENOKV_BIN && existsSync(process.env.DENOKV_BIN)) return process.env.DENOKV_BIN;
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(`${dir}/denokv`)) return `${dir}/denokv`;
  }
  return undefined;
}

export async function startCoordination(
  kind: CoordinationKind,
  options: SpawnOptions = {},
): Promise<Coordination> {
  if (kind === "etcd") {
    if (etcdBinary() === undefined) {
      throw new MissingBinary(
        "etcd is not installed: install Debian's etcd-server (scripts/install.sh does, as root) or set ETCD_BIN; or pass --coordination denokv",
      );
    }
    const etcd = await startEtcd(options);
    return {
      kind,
      url: etcd.url,
      token: "",
      pid: etcd.pid,
      stop: (graceMs) => etcd.stop(graceMs),
    };
  }
  if (kind === "denokv") return await startDenokv(options);
  return await startKvHost(options);
}

async function startDenokv(options: SpawnOptions): Promise<Coordination> {
  const bin = denokvBinary();
  if (!bin) {
    throw new MissingBinary(
      "denokv is not on PATH (https://github.com/denoland/denokv: a release binary, or `cargo install denokv`); set DENOKV_BIN, or use --coordination etcd",
    );
  }
  const dir = tempDir("denokv");
  const port = await stablePort();
  const child = spawn(bin, [
    "--sqlite-path",
    `${dir}/kv.sqlite`,
    "serve",
    "--addr",
    `127.0.0.1:${port}`,
    "--access-token",
    LOCAL_KV_TOKEN,
  ], {
    env: { ...process.env, DENO_KV_ACCESS_TOKEN: LOCAL_KV_TOKEN },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  const run = new ChildRun(child, "denokv");
  const store: Coordination = {
    kind: "denokv",
    url: `http://127.0.0.1:${port}`,
    token: LOCAL_KV_TOKEN,
    pid: run.pid,
    stop: async (graceMs = 5000) => {
      await stopRun(run, graceMs);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (!await listening(port, run)) {
    const log = run.stderr.join("").slice(-2000);
    await store.stop(0);
    throw new Error(`denokv did not start:\n${log}`);
  }
  return store;
}

async function startKvHost(options: SpawnOptions): Promise<Coordination> {
  const run = startChild("deno", "tools/kv_host/main.ts", ["--port", "0"], {
    DENO_KV_ACCESS_TOKEN: LOCAL_KV_TOKEN,
  }, options);
  try {
    const { url } = await run.waitForJson<{ url: string }>(
      "KV host url",
      (v) => typeof v.url === "string",
    );
    return {
      kind: "kv-host",
      url,
      token: LOCAL_KV_TOKEN,
      pid: run.pid,
      stop: (graceMs = 5000) => stopRun(run, graceMs),
    };
  } catch (err) {
    await run[Symbol.asyncDispose]();
    throw err;
  }
}

/** SIGTERM, then SIGKILL by PID once `graceMs` passes without an exit. */
export async function stopRun(run: ChildRun, graceMs: number): Promise<void> {
  run.kill("SIGTERM");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = await Promise.race([
    run.exited.then(() => false),
    new Promise<boolean>((r) => timer = setTimeout(() => r(true), graceMs)),
  ]);
  clearTimeout(timer);
  if (late) run.kill("SIGKILL");
  await run.exited;
}

/** Waits until `port` accepts TCP connections (denokv prints no ready line). */
async function listening(port: number, run: ChildRun): Promise<boolean> {
  let exited = false;
  run.exited.then(() => exited = true);
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline && !exited) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
