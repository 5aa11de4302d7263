// A replicated broker group as real processes: one KV Connect host (or one etcd,
// startEtcd()) and N brokers
// (haMode cluster) on loopback, each with its own data folder that outlives its process,
// so a killed replica can be started again on its data.
import { rmSync } from "node:fs";
import type { HaStatus } from "../../runtime/ha/node.ts";
import { type ChildRun, type RuntimeName, startChild } from "./process.ts";
import { type BrokerProcess, startBroker, tempDir } from "./broker.ts";
import { type EtcdProcess, startEtcd } from "./etcd.ts";
import { stablePort } from "../../tools/cluster/ports.ts";

export const KV_TOKEN = "kv-test-token-0123456789";

export interface Replica {
  id: number;
  dataDir: string;
  proc: BrokerProcess | undefined;
}

export class Cluster implements AsyncDisposable {
  readonly replicas: Replica[];
  #kv: ChildRun | undefined;
  #etcd: EtcdProcess | undefined;
  kvUrl = "";
  /** Ports of the KV host, fixed so it can be restarted at the same address. */
  #kvPort = 0;

  constructor(
    readonly runtime: RuntimeName,
    readonly size: number,
    readonly env: Record<string, string>,
  ) {
    this.replicas = Array.from({ length: size }, (_, id) => ({
      id,
      dataDir: tempDir(`ha-${runtime}-${id}`),
      proc: undefined,
    }));
  }

  async startKv(): Promise<void> {
    this.#kvPort ||= await stablePort();
    this.#kv = startChild("deno", "tools/kv_host/main.ts", [
      "--port",
      String(this.#kvPort),
      "--token",
      KV_TOKEN,
      "--database-id",
      "00000000-0000-4000-8000-000000000001",
    ]);
    const { url } = await this.#kv.waitForJson<{ url: string }>(
      "KV host url",
      (v) => typeof v.url === "string",
    );
    this.kvUrl = url;
    this.#kvPort = Number(new URL(url).port);
  }

  /** etcd instead of the KV host: brokers get MQ_KV=etcd://127.0.0.1:port. */
  async startEtcd(): Promise<void> {
    this.#etcd = await startEtcd();
    this.kvUrl = this.#etcd.url;
  }

  async stopKv(): Promise<void> {
    await this.#etcd?.[Symbol.asyncDispose]();
    this.#etcd = undefined;
    this.#kv?.kill("SIGKILL");
    await this.#kv?.exited;
    this.#kv = undefined;
  }

  async start(id: number, extraEnv: Record<string, string> = {}): Promise<BrokerProcess> {
    const r = this.replicas[id];
    r.proc = await startBroker(this.runtime, {
      dataDir: r.dataDir,
      env: {
        MQ_HA_MODE: "cluster",
        MQ_BROKER_ID: String(id),
        MQ_KV: this.kvUrl,
        DENO_KV_ACCESS_TOKEN: KV_TOKEN,
        ...this.env,
        ...extraEnv,
      },
    });
    return r.proc;
  }

  async kill(id: number): Promise<void> {
    await this.replicas[id].proc?.kill();
    this.replicas[id].proc = undefined;
  }

  async status(id: number): Promise<HaStatus | undefined> {
    const proc = this.replicas[id].proc;
    if (!proc) return undefined;
    try {
      const res = await fetch(`${proc.url}/v1/ha/status`, { signal: AbortSignal.timeout(2000) });
      return res.ok ? await res.json() as HaStatus : undefined;
    } catch {
      return undefined;
    }
  }

  async statuses(): Promise<(HaStatus | undefined)[]> {
    return await Promise.all(this.replicas.map((r) => this.status(r.id)));
  }

  /** Waits until exactly one running replica is master and `slaves` others replicate
   * (TRANSFER, in sync); returns the master's id. */
  async waitForMaster(slaves: number, timeoutMs = 30_000, not?: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    let last: unknown;
    while (performance.now() < deadline) {
      const all = await this.statuses();
      last = all;
      const masters = all.filter((s) => s?.role === "master");
      const following = all.filter((s) =>
        s?.role === "slave" && s.slave?.state === "TRANSFER" && s.slave.inSync
      );
      if (
        masters.length === 1 && following.length >= slaves && masters[0]!.brokerId !== not
      ) return masters[0]!.brokerId;
      await new Promise((r) => setTimeout(r, 50));
    }
    const logs = this.replicas.map((r) => `--- replica ${r.id} ---\n${tail(r.proc, 60)}`);
    throw new Error(
      `No master with ${slaves} slaves in ${timeoutMs} ms: ${JSON.stringify(last)}\n` +
        logs.join("\n"),
    );
  }

  async [Symbol.asyncDispose]() {
    for (const r of this.replicas) {
      await r.proc?.kill().catch(() => {});
      rmSync(r.dataDir, { recursive: true, force: true });
    }
    await this.stopKv();
  }
}

/** The lines a replica wrote, for failure messages. */
export function tail(proc: BrokerProcess | undefined, lines = 30): string {
  return proc ? proc.child.stderr.join("").split("\n").slice(-lines).join("\n") : "(not running)";
}
