// Spawning real Deno and Bun processes (the local cluster launcher, tools/cluster/, and the
// cross-process tests, tests/harness/): line-based stdout, waiting for conditions (never
// for fixed times), and killing with real signals, by PID.
import process from "node:process";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

export type RuntimeName = "deno" | "bun";
export const RUNTIMES: RuntimeName[] = ["deno", "bun"];

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

/** A fresh folder under the OS temp dir, `mq-<label>-XXXXXX`; the caller removes it. */
export function tempDir(label: string): string {
  return mkdtempSync(`${tmpdir()}/mq-${label}-`);
}

export function runtimeBinary(runtime: RuntimeName): string {
  const local = `${REPO_ROOT}/.tools/node_modules/.bin/${runtime}`;
  return existsSync(local) ? local : runtime;
}

/**
 * The `--v8-flags=…` argument of deno.json's start task, so that benches and tests start a
 * Deno broker as `deno task start` runs it and the two cannot drift apart.
 */
export function startTaskV8Flags(): string {
  if (v8Flags !== undefined) return v8Flags;
  const denoJson = JSON.parse(readFileSync(`${REPO_ROOT}/deno.json`, "utf8"));
  const flag = String(denoJson.tasks?.start ?? "").split(/\s+/).find((a) =>
    a.startsWith("--v8-flags=")
  );
  if (!flag) throw new Error("deno.json's start task has no --v8-flags=… argument");
  return v8Flags = flag;
}
let v8Flags: string | undefined;

export function runtimeCommand(
  runtime: RuntimeName,
  script: string,
  args: string[],
  denoFlags: string[] = [],
): [string, string[]] {
  const bin = runtimeBinary(runtime);
  return runtime === "deno"
    ? [bin, ["run", ...denoFlags, "-A", script, ...args]]
    : [bin, ["run", script, ...args]];
}

export class ChildRun implements AsyncDisposable {
  readonly lines: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  #partial = "";
  #waiters = new Set<() => void>();
  #exitedNow = false;

  constructor(readonly child: ChildProcess, readonly label: string) {
    child.stdout!.setEncoding("utf8");
    child.stderr!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      const parts = (this.#partial + chunk).split("\n");
      this.#partial = parts.pop()!;
      this.lines.push(...parts);
      this.#notify();
    });
    child.stderr!.on("data", (chunk: string) => {
      this.stderr.push(chunk);
      this.#notify();
    });
    this.exited = new Promise((resolve) => {
      child.on("close", (code, signal) => {
        if (this.#partial) this.lines.push(this.#partial);
        this.#partial = "";
        this.#exitedNow = true;
        this.#notify();
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Waits until `test` holds (checked on every output line), the child exits, or the deadline. */
  async waitFor<T>(
    what: string,
    test: () => T | undefined | false,
    deadlineMs = 30_000,
  ): Promise<T> {
    const started = performance.now();
    for (;;) {
      const v = test();
      if (v) return v;
      if (this.#exitedNow) {
        throw new Error(
          `${this.label} exited while waiting for ${what}; stderr: ${
            this.stderr.join("").slice(-2000)
          }`,
        );
      }
      const left = deadlineMs - (performance.now() - started);
      if (left <= 0) {
        throw new Error(
          `${this.label}: timed out waiting for ${what}; stderr: ${
            this.stderr.join("").slice(-2000)
          }`,
        );
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, 250));
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.#waiters.add(done);
      });
    }
  }

  /** The first stdout line that parses as JSON and satisfies `test`. */
  waitForJson<T>(
    what: string,
    test: (value: Record<string, unknown>) => boolean,
    deadlineMs?: number,
  ): Promise<T> {
    return this.waitFor(what, () => {
      for (const line of this.lines) {
        if (!line.startsWith("{")) continue;
        try {
          const value = JSON.parse(line);
          if (test(value)) return value as T;
        } catch { /* not JSON */ }
      }
      return undefined;
    }, deadlineMs);
  }

  /** Sends `signal` by pid: Deno's ChildProcess.kill() delivers only the first signal it is
   * given (a SIGCONT after a SIGSTOP, or a SIGKILL after either, would be dropped). */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.#exitedNow || this.child.pid === undefined) return;
    try {
      process.kill(this.child.pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err; // gone meanwhile
    }
  }

  async [Symbol.asyncDispose]() {
    this.kill("SIGKILL");
    await this.exited;
  }

  #notify() {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }
}

export interface SpawnOptions {
  /** Its own process group: a Ctrl-C (or `timeout`) aimed at the parent's group does not
   * reach it, so the parent stops its children in order (the launcher: functions, brokers,
   * then the store they unregister from). */
  detached?: boolean;
  /** Flags for `deno run` (a Deno child only), such as the start task's --v8-flags. */
  denoFlags?: string[];
}

export function startChild(
  runtime: RuntimeName,
  script: string,
  args: string[],
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): ChildRun {
  const [bin, argv] = runtimeCommand(runtime, script, args, options.denoFlags);
  const child = spawn(bin, argv, {
    cwd: REPO_ROOT,
    detached: options.detached ?? false,
    // Remoting on ephemeral ports: tests run side by side, so never RocketMQ's 9876/10911.
    env: { ...process.env, NO_COLOR: "1", MQ_NAMESRV_PORT: "0", MQ_REMOTING_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new ChildRun(child, `${runtime} ${script}`);
}
