// One broker group of a local cluster (issue #26): a master on its own (haMode none), or a
// master with slaves (haMode cluster: the lease in the coordination store picks the
// master). Every replica is runtime/main.ts on free ports with its own data folder, which
// outlives its process so a killed replica can start again on its data.
import { mkdirSync } from "node:fs";
import { type ChildRun, type RuntimeName, type SpawnOptions, startChild } from "./process.ts";
import { stopRun } from "./coordination.ts";

export interface GroupReplica {
  id: number;
  dataDir: string;
  run?: ChildRun;
  /** Its HTTP API while running. */
  url?: string;
}

export interface GroupOptions {
  runtime: RuntimeName;
  name: string;
  /** 1: a master on its own; more: a replicated group (master + slaves). */
  replicas: number;
  /** Where the replicas' data folders go (removed by the cluster, not here). */
  dataRoot: string;
  /** MQ_KV, DENO_KV_ACCESS_TOKEN, MQ_CLUSTER and any extra settings. */
  env: Record<string, string>;
  spawn?: SpawnOptions;
}

export class BrokerGroup {
  readonly replicas: GroupReplica[];

  constructor(readonly options: GroupOptions) {
    this.replicas = Array.from({ length: options.replicas }, (_, id) => {
      const dataDir = `${options.dataRoot}/${options.name}-${id}`;
      mkdirSync(dataDir, { recursive: true });
      return { id, dataDir };
    });
  }

  get name(): string {
    return this.options.name;
  }

  get replicated(): boolean {
    return this.options.replicas > 1;
  }

  /** PIDs of running replicas. */
  pids(): number[] {
    return this.replicas.flatMap((r) => r.run ? [r.run.pid] : []);
  }

  /** Starts every replica that is not running, then waits for a master. */
  async start(): Promise<void> {
    await Promise.all(this.replicas.filter((r) => !r.run).map((r) => this.startReplica(r.id)));
    await this.master();
  }

  async startReplica(id: number): Promise<GroupReplica> {
    const r = this.replicas[id];
    const { runtime, name, env } = this.options;
    r.run = startChild(runtime, "runtime/main.ts", [], {
      PORT: "0",
      MQ_GRPC_PORT: "0",
      DATA_DIR: r.dataDir,
      MQ_LOG_LEVEL: "warn",
      MQ_BROKER_NAME: name,
      ...(this.replicated ? { MQ_HA_MODE: "cluster", MQ_BROKER_ID: String(id) } : {}),
      ...env,
    }, this.options.spawn);
    try {
      const { url } = await r.run.waitForJson<{ url: string }>(
        `${name}/${id} listening`,
        (v) => v.event === "listening",
        60_000,
      );
      r.url = url;
    } catch (err) {
      await this.kill(id);
      throw err;
    }
    return r;
  }

  /** The master's replica: the lone broker, or the replica whose HA status says master
   * (waits up to `timeoutMs`; `not` skips a replica known to be gone). */
  async master(timeoutMs = 30_000, not?: number): Promise<GroupReplica> {
    if (!this.replicated) {
      const r = this.replicas[0];
      if (!r.run) throw new Error(`${this.name}: its broker is not running`);
      return r;
    }
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      for (const r of this.replicas) {
        if (!r.run || !r.url || r.id === not) continue;
        const status = await haStatus(r.url);
        if (status?.role === "master") return r;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`${this.name}: no master within ${timeoutMs} ms`);
  }

  /** SIGKILL one replica (a crash); its data stays. */
  async kill(id: number): Promise<void> {
    const r = this.replicas[id];
    r.run?.kill("SIGKILL");
    await r.run?.exited;
    r.run = undefined;
    r.url = undefined;
  }

  /** SIGTERM every replica at once, SIGKILL by PID after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    const running = this.replicas.filter((r) => r.run);
    await Promise.all(running.map(async (r) => {
      await stopRun(r.run!, graceMs);
      r.run = undefined;
      r.url = undefined;
    }));
  }
}

async function haStatus(url: string): Promise<{ role?: string } | undefined> {
  try {
    const res = await fetch(`${url}/v1/ha/status`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? await res.json() : (await res.body?.cancel(), undefined);
  } catch {
    return undefined;
  }
}
