// A local cluster in one command (issue #26, docs/cluster.md "Run a local cluster"):
//
//   npm run cluster -- --groups 3 [--replicas 2] [--coordination etcd|denokv|kv-host]
//                      [--runtime deno|bun] [--functions 1]
//   (or: deno run -A tools/cluster/main.ts …)
//
// Starts the coordination store (etcd by default), the broker groups and the functions on
// free loopback ports with temp data folders, then prints ONE JSON line on stdout:
//   {"event":"cluster-ready","url":"http://127.0.0.1:…","functions":[…],"groups":[…],…}
// (url: the functions process clients talk to). SIGTERM or SIGINT stops everything it
// started (SIGTERM, then SIGKILL by PID after --grace-ms) and removes its temp folders,
// then it prints {"event":"cluster-stopped"} and exits 0. The children's log lines go to
// stderr, each prefixed with its name. Exit 2: bad arguments or a missing store binary.
import process from "node:process";
import { defineCommand, runMain } from "citty";
import { COORDINATION_KINDS, type CoordinationKind, MissingBinary } from "./coordination.ts";
import { LocalCluster } from "./local_cluster.ts";
import { type ChildRun, type RuntimeName, RUNTIMES } from "./process.ts";

const GROUPS_MAX = 26;

const command = defineCommand({
  meta: {
    name: "cluster",
    description: "Start a local edgemq cluster: a coordination store, broker groups, functions",
  },
  args: {
    groups: { type: "string", default: "3", description: "Broker groups (1-26)" },
    replicas: {
      type: "string",
      default: "1",
      description: "Replicas per group: 1 = a master only, 2 = master + slave, …",
    },
    functions: { type: "string", default: "1", description: "Functions processes (1-8)" },
    coordination: {
      type: "string",
      default: "etcd",
      description:
        "etcd (Debian's etcd-server), denokv (a denokv binary on PATH), or kv-host (the in-memory KV Connect host: a TEST FIXTURE, data lost on stop)",
    },
    runtime: { type: "string", default: "deno", description: "deno or bun, for every process" },
    "grace-ms": {
      type: "string",
      default: "15000",
      description: "How long a child may take to stop before SIGKILL",
    },
  },
  async run({ args }) {
    const groups = count("--groups", args.groups, 1, GROUPS_MAX);
    const replicas = count("--replicas", args.replicas, 1, 5);
    const functions = count("--functions", args.functions, 1, 8);
    const graceMs = count("--grace-ms", args["grace-ms"], 0, 600_000);
    const coordination = args.coordination as CoordinationKind;
    if (!COORDINATION_KINDS.includes(coordination)) {
      fail(`--coordination must be one of ${COORDINATION_KINDS.join(", ")}`);
    }
    const runtime = args.runtime as RuntimeName;
    if (!RUNTIMES.includes(runtime)) fail(`--runtime must be one of ${RUNTIMES.join(", ")}`);
    if (coordination === "kv-host") {
      process.stderr.write(
        "cluster: kv-host is the in-memory KV Connect host, a test fixture: routes and leases live in its process only. Use etcd or denokv for anything else.\n",
      );
    }
    await launch(
      new LocalCluster({
        runtime,
        groups,
        replicas,
        functions,
        coordination,
        graceMs,
        spawn: { detached: true },
      }),
    );
  },
});

async function launch(cluster: LocalCluster) {
  let signalled: string | undefined;
  let started = false;
  const stop = async () => {
    await cluster.stop();
    process.stdout.write(JSON.stringify({ event: "cluster-stopped", signal: signalled }) + "\n");
    process.exit(0);
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      if (signalled) return;
      signalled = signal;
      if (started) void stop(); // during start-up: stopped once start() returns
    });
  }
  try {
    await cluster.start();
  } catch (err) {
    if (err instanceof MissingBinary) fail(err.message);
    process.stderr.write(`cluster: did not start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  started = true;
  if (signalled) return void stop();
  for (const g of cluster.groups) {
    for (const r of g.replicas) if (r.run) forwardLog(r.run, `${g.name}/${r.id}`);
  }
  cluster.functions.forEach((f, i) => forwardLog(f.run, `functions/${i}`));
  process.stdout.write(JSON.stringify({ event: "cluster-ready", ...cluster.describe() }) + "\n");
}

/** The child's stderr from now on, each line prefixed with `name`. */
function forwardLog(run: ChildRun, name: string) {
  let partial = "";
  run.child.stderr!.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop()!;
    for (const line of parts) process.stderr.write(`[${name}] ${line}\n`);
  });
}

function count(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    fail(`${flag} must be an integer in ${min}..${max}, got ${JSON.stringify(text)}`);
  }
  return n;
}

function fail(message: string): never {
  process.stderr.write(`cluster: ${message}\n`);
  process.exit(2);
}

await runMain(command);
