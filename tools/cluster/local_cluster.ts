// A whole cluster on this machine (issue #26): a coordination store, N broker groups and
// M stateless functions processes, all on free loopback ports with temp data folders. The
// launcher (tools/cluster/main.ts, `npm run cluster`), the cluster tests and the cluster
// bench start it through here; stop() ends everything it started, gracefully first, by PID.
import { rmSync } from "node:fs";
import { BrokerGroup } from "./broker_group.ts";
import {
  type Coordination,
  type CoordinationKind,
  startCoordination,
  stopRun,
} from "./coordination.ts";
import {
  type ChildRun,
  type RuntimeName,
  type SpawnOptions,
  startChild,
  tempDir,
} from "./process.ts";

export interface LocalClusterOptions {
  runtime: RuntimeName;
  /** Broker groups to start (named broker-a, broker-b, …). */
  groups: number;
  /** Replicas per group (1: a master only); a function picks per group index. */
  replicas?: number | ((groupIndex: number) => number);
  /** Functions processes (default 1). */
  functions?: number;
  coordination?: CoordinationKind;
  /** MQ_CLUSTER (default DefaultCluster, the brokers' own default). */
  clusterName?: string;
  /** Extra settings for every broker. */
  brokerEnv?: Record<string, string>;
  /** Extra settings for every functions process. */
  functionsEnv?: Record<string, string>;
  /** How long stop() waits for a graceful exit before SIGKILL (default 15 s). */
  graceMs?: number;
  /** detached: every child in its own process group (the launcher: a Ctrl-C reaches only
   * it, and it stops the children in order). */
  spawn?: SpawnOptions;
}

export interface FunctionsRun {
  url: string;
  run: ChildRun;
}

/** broker-a … broker-z, then broker-26, … (RocketMQ's own naming). */
export function groupName(index: number): string {
  return index < 26 ? `broker-${String.fromCharCode(97 + index)}` : `broker-${index}`;
}

export class LocalCluster implements AsyncDisposable {
  readonly groups: BrokerGroup[] = [];
  readonly functions: FunctionsRun[] = [];
  readonly dataRoot = tempDir("cluster");
  coordination?: Coordination;
  #stopped = false;

  constructor(readonly options: LocalClusterOptions) {}

  get runtime(): RuntimeName {
    return this.options.runtime;
  }

  /** The functions URL clients use (the first functions process). */
  get url(): string {
    return this.functions[0]?.url ?? "";
  }

  /** Settings every broker and functions process shares. */
  get sharedEnv(): Record<string, string> {
    const c = this.coordination!;
    return {
      MQ_KV: c.url,
      ...(c.token ? { DENO_KV_ACCESS_TOKEN: c.token } : {}),
      MQ_CLUSTER: this.options.clusterName ?? "DefaultCluster",
    };
  }

  /** Starts the store, the groups (in parallel) and the functions; on a failure, stops
   * what started and rethrows. */
  async start(): Promise<this> {
    try {
      this.coordination = await startCoordination(
        this.options.coordination ?? "etcd",
        this.options.spawn,
      );
      await Promise.all(
        Array.from({ length: this.options.groups }, (_, i) => this.addGroup(groupName(i))),
      );
      await Promise.all(
        Array.from({ length: this.options.functions ?? 1 }, () => this.addFunctions()),
      );
      await this.waitForGroups();
    } catch (err) {
      await this.stop();
      throw err;
    }
    return this;
  }

  /** Starts one more broker group (expansion: then add it to a topic). */
  async addGroup(name: string, replicas?: number): Promise<BrokerGroup> {
    const perGroup = this.options.replicas ?? 1;
    const index = this.groups.length;
    const group = new BrokerGroup({
      runtime: this.runtime,
      name,
      replicas: replicas ?? (typeof perGroup === "function" ? perGroup(index) : perGroup),
      dataRoot: this.dataRoot,
      env: { ...this.sharedEnv, ...this.options.brokerEnv },
      spawn: this.options.spawn,
    });
    this.groups.push(group);
    await group.start();
    if (this.functions.length > 0) await this.waitForGroups();
    return group;
  }

  group(name: string): BrokerGroup {
    const g = this.groups.find((g) => g.name === name);
    if (!g) throw new Error(`no group ${name}`);
    return g;
  }

  /** Stops a group's brokers and forgets it (after a drain). */
  async removeGroup(name: string): Promise<void> {
    const g = this.group(name);
    await g.stop(this.options.graceMs ?? 15_000);
    this.groups.splice(this.groups.indexOf(g), 1);
  }

  async addFunctions(): Promise<FunctionsRun> {
    const run = startChild(this.runtime, "functions/main.ts", [], {
      PORT: "0",
      MQ_GRPC_PORT: "0",
      MQ_LOG_LEVEL: "warn",
      ...this.sharedEnv,
      ...this.options.functionsEnv,
    }, this.options.spawn);
    const entry = { url: "", run };
    this.functions.push(entry);
    const { url } = await run.waitForJson<{ url: string }>(
      "functions listening",
      (v) => v.event === "listening",
      60_000,
    );
    entry.url = url;
    return entry;
  }

  /** Waits until every functions process sees a master of every group (GET /v1/cluster):
   * a replicated group's master registers its route just after it says master, and a
   * functions process keeps the live groups it read for routeCacheMs. */
  async waitForGroups(timeoutMs = 30_000): Promise<void> {
    const names = this.groups.map((g) => g.name);
    const deadline = performance.now() + timeoutMs;
    let seen: string[] = [];
    for (const f of this.functions) {
      for (;;) {
        seen = await mastersSeen(f.url);
        if (names.every((n) => seen.includes(n))) break;
        if (performance.now() > deadline) {
          throw new Error(
            `functions ${f.url} see masters of ${seen.join(", ") || "no group"}, not of all of ${
              names.join(", ")
            }, after ${timeoutMs} ms`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** Every PID this cluster started that still runs (the store's included). */
  pids(): number[] {
    return [
      ...(this.coordination ? [this.coordination.pid] : []),
      ...this.groups.flatMap((g) => g.pids()),
      ...this.functions.filter((f) => f.run.child.exitCode === null).map((f) => f.run.pid),
    ];
  }

  /** The cluster-ready line's fields. */
  describe(): Record<string, unknown> {
    return {
      url: this.url,
      functions: this.functions.map((f) => ({ url: f.url, pid: f.run.pid })),
      groups: this.groups.map((g) => ({
        name: g.name,
        brokers: g.replicas.map((r) => ({ id: r.id, url: r.url, pid: r.run?.pid })),
      })),
      coordination: this.coordination && {
        kind: this.coordination.kind,
        url: this.coordination.url,
        pid: this.coordination.pid,
      },
      runtime: this.runtime,
      dataDir: this.dataRoot,
    };
  }

  /** Functions first (they hold no state), then the brokers, then the store; SIGKILL by
   * PID for any that outlive the grace period; then the temp folders go. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    const grace = this.options.graceMs ?? 15_000;
    await Promise.all(this.functions.map((f) => stopRun(f.run, grace)));
    await Promise.all(this.groups.map((g) => g.stop(grace)));
    await this.coordination?.stop(grace);
    rmSync(this.dataRoot, { recursive: true, force: true });
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/** Groups whose master a functions process lists in its cluster view. */
async function mastersSeen(url: string): Promise<string[]> {
  try {
    const res = await fetch(`${url}/v1/cluster`, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) {
      await res.body?.cancel();
      return [];
    }
    const view = await res.json() as { nodes: { brokerGroup: string; role: string }[] };
    return view.nodes.filter((n) => n.role === "master").map((n) => n.brokerGroup);
  } catch {
    return [];
  }
}
