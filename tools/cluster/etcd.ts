// A throwaway single-member etcd v3 for local clusters (tools/cluster/main.ts) and tests:
// Debian's `etcd-server` binary (installed by scripts/install.sh; ETCD_BIN overrides), on
// two free loopback ports below the ephemeral range (tools/cluster/ports.ts: it is restarted
// at the same address) with a temp data dir, stopped by PID and its data removed at the
// end. Tests skip, saying why, without it; the launcher exits 2 saying why.
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import process from "node:process";
import { stablePort } from "./ports.ts";
import { ChildRun, type SpawnOptions, tempDir } from "./process.ts";

/** The etcd binary, or undefined when none is installed. */
export function etcdBinary(): string | undefined {
  const candidates = [process.env.ETCD_BIN, "/usr/bin/etcd", "/usr/local/bin/etcd"];
  return candidates.find((p): p is string => p !== undefined && p !== "" && existsSync(p));
}

/** Why etcd tests skip, or undefined when they can run. */
export const ETCD_SKIP_REASON = etcdBinary() === undefined
  ? "etcd is not installed (scripts/install.sh installs Debian's etcd-server as root)"
  : undefined;

/** Restarts tried while a port is still in use (a closing connection's TIME_WAIT, a test). */
const RESTART_ATTEMPTS = 10;

export class EtcdProcess implements AsyncDisposable {
  #run: ChildRun;
  constructor(
    run: ChildRun,
    readonly dataDir: string,
    readonly ports: { client: number; peer: number },
    readonly options: SpawnOptions = {},
  ) {
    this.#run = run;
  }

  /** etcd://127.0.0.1:port, the kvPath (MQ_KV) for brokers. */
  get url(): string {
    return `etcd://127.0.0.1:${this.ports.client}`;
  }

  get pid(): number {
    return this.#run.child.pid!;
  }

  /** SIGKILL; the data dir stays for restart(). */
  async kill(): Promise<void> {
    this.#run.child.kill("SIGKILL");
    await this.#run.exited;
  }

  /** The same member again: same ports, same data; a port still held is waited for. */
  async restart(): Promise<void> {
    await this.kill();
    for (let attempt = 1;; attempt++) {
      this.#run = spawnEtcd(this.dataDir, this.ports, this.options);
      if (await healthy(this.ports.client, this.#run)) return;
      const log = this.#run.stderr.join("").slice(-2000);
      await this.kill();
      if (attempt === RESTART_ATTEMPTS || !log.includes("address already in use")) {
        throw new Error(`etcd did not restart:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** SIGTERM (etcd syncs and exits), SIGKILL after `graceMs`; the data dir is removed. */
  async stop(graceMs = 5000): Promise<void> {
    this.#run.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#run.exited,
      new Promise((r) => timer = setTimeout(r, graceMs)),
    ]);
    clearTimeout(timer);
    await this[Symbol.asyncDispose]();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

function spawnEtcd(
  dataDir: string,
  ports: { client: number; peer: number },
  options: SpawnOptions,
): ChildRun {
  const clientUrl = `http://127.0.0.1:${ports.client}`;
  const peerUrl = `http://127.0.0.1:${ports.peer}`;
  const child = spawn(etcdBinary()!, [
    "--name=test",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
    "--log-level=warn",
  ], { stdio: ["ignore", "pipe", "pipe"], detached: options.detached ?? false });
  return new ChildRun(child, "etcd");
}

/** Starts etcd and waits until it serves clients; retries once if a port was taken meanwhile. */
export async function startEtcd(options: SpawnOptions = {}): Promise<EtcdProcess> {
  if (etcdBinary() === undefined) throw new Error(ETCD_SKIP_REASON);
  for (let attempt = 1;; attempt++) {
    const ports = { client: await stablePort(), peer: await stablePort() };
    const dataDir = tempDir("etcd");
    const run = spawnEtcd(dataDir, ports, options);
    const proc = new EtcdProcess(run, dataDir, ports, options);
    if (await healthy(ports.client, run)) return proc;
    const log = run.stderr.join("").slice(-2000);
    await proc[Symbol.asyncDispose]();
    if (attempt === 2) throw new Error(`etcd did not start:\n${log}`);
  }
}

async function healthy(clientPort: number, run: ChildRun): Promise<boolean> {
  const clientUrl = `http://127.0.0.1:${clientPort}`;
  const deadline = performance.now() + 15_000;
  let exited = false;
  run.exited.then(() => exited = true);
  while (performance.now() < deadline && !exited) {
    try {
      const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
      const body = await res.json() as { health?: string };
      if (body.health === "true") return true;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
