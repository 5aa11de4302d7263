// Helpers shared by the benches: flags, runtime name, progress lines, number formatting,
// a cooperative yield, how idle the machine is and how much CPU the host steals, and the
// broker's Deno V8 flags. Portable between Deno and Bun: node:* modules only, no Deno.* or
// Bun.* API, so the same file runs on both and the figures compare.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { startTaskV8Flags } from "../tools/cluster/process.ts";
import { setImmediate } from "node:timers";

/** `--name value` / `--name=value` / `--flag` parsing, enough for a bench. */
export class Flags {
  readonly #args: string[];
  constructor(args: string[]) {
    this.#args = args;
  }

  has(name: string): boolean {
    return this.#args.includes(`--${name}`);
  }

  number(name: string, fallback: number): number {
    const raw = this.#value(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0) {
      throw new Error(`Cannot use --${name} ${JSON.stringify(raw)}: expected a positive number`);
    }
    return value;
  }

  string(name: string, fallback: string): string {
    return this.#value(name) ?? fallback;
  }

  #value(name: string): string | undefined {
    for (let i = 0; i < this.#args.length; i++) {
      const arg = this.#args[i];
      if (arg === `--${name}`) return this.#args[i + 1];
      if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
    }
    return undefined;
  }
}

/** Flags after the script path, on both runtimes (process.argv is [exe, script, ...]). */
export function commandLine(): Flags {
  return new Flags(process.argv.slice(2));
}

export interface RuntimeInfo {
  name: "deno" | "bun" | "node";
  version: string;
}

export function runtimeInfo(): RuntimeInfo {
  const versions = process.versions as Record<string, string | undefined>;
  if (versions.deno) return { name: "deno", version: versions.deno };
  if (versions.bun) return { name: "bun", version: versions.bun };
  return { name: "node", version: process.version };
}

/** Operations per second of a timed run. */
export interface Rate {
  ops: number;
  seconds: number;
  perSecond: number;
}

export function rateOf(ops: number, startMs: number, endMs = performance.now()): Rate {
  const seconds = (endMs - startMs) / 1000;
  return { ops, seconds, perSecond: ops / seconds };
}

/** Prints "label: done/total, rate" every `everyMs` of a long phase. */
export class Progress {
  #done = 0;
  #nextCheck = 256;
  readonly #start = performance.now();
  #lastPrint = this.#start;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly everyMs = 2000,
  ) {}

  /** Counts `n` operations; looks at the clock only every 256 of them. */
  tick(n = 1): void {
    this.#done += n;
    if (this.#done < this.#nextCheck) return;
    this.#nextCheck = this.#done + 256;
    const now = performance.now();
    if (now - this.#lastPrint < this.everyMs) return;
    this.#lastPrint = now;
    const rate = this.#done / ((now - this.#start) / 1000);
    say(`    .. ${this.label}: ${count(this.#done)}/${count(this.total)}, ${count(rate)}/s so far`);
  }
}

/**
 * Hands the event loop a turn every `everyMs`, so timers and I/O callbacks run as they
 * would in a server whose requests arrive as I/O events. Appenders that only await
 * promises run as microtasks and would otherwise starve every timer (the store's async
 * flush, checkpoint and segment zero-fill). All callers share one pending turn.
 */
export class Yielder {
  #next = 0;
  #pending: Promise<void> | undefined;
  constructor(private readonly everyMs: number) {}

  /** A promise to await when a turn is due, else undefined (no await, no microtask). */
  due(): Promise<void> | undefined {
    if (this.#pending) return this.#pending;
    if (!Number.isFinite(this.everyMs)) return undefined;
    const now = performance.now();
    if (now < this.#next) return undefined;
    this.#next = now + this.everyMs;
    this.#pending = new Promise((resolve) =>
      setImmediate(() => {
        this.#pending = undefined;
        resolve();
      })
    );
    return this.#pending;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function say(line: string): void {
  console.log(line);
}

/** 1234567 -> "1,234,567"; fractions below 10 keep two decimals. */
export function count(value: number): string {
  if (Math.abs(value) < 10) return value.toFixed(2);
  return Math.round(value).toLocaleString("en-US");
}

/** "1 appender", "16 appenders". */
export function appenders(n: number): string {
  return `${n} appender${n === 1 ? "" : "s"}`;
}

export function ratio(value: number): string {
  return value.toFixed(value < 10 ? 2 : 1);
}

/** The value at `p` (0-1) of ascending `sorted`: index floor(n * p), NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN;
}

/** The middle value (the upper of the two middles for an even count). */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}

/** Rounds a figure for the JSON line: 3 significant decimals for small, integers for large. */
export function round(value: number): number {
  return Math.abs(value) >= 1000 ? Math.round(value) : Number(value.toPrecision(4));
}

/** One "figure vs baseline" line: the store rate, the baseline rate and their ratio. */
export function compareLine(
  label: string,
  figure: Rate,
  baselineLabel: string,
  baseline: Rate,
  unit = "msg/s",
): string {
  return `  ${label.padEnd(28)} ${count(figure.perSecond).padStart(11)} ${unit}   vs ${
    baselineLabel.padEnd(30)
  } ${count(baseline.perSecond).padStart(11)}/s   ratio ${
    ratio(figure.perSecond / baseline.perSecond)
  }`;
}

/**
 * The share of the machine's CPU time left idle over `ms` (Linux /proc/stat; undefined
 * elsewhere). Benches measure it before they start: a core held by another process skews
 * a server against its baseline, and the latency tails most of all.
 */
export async function machineIdleShare(ms = 1000): Promise<number | undefined> {
  const before = cpuTimes();
  if (!before) return undefined;
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = cpuTimes()!;
  return (after.idle - before.idle) / Math.max(1, after.total - before.total);
}

/** The machine's CPU time counters (Linux /proc/stat, in ticks); undefined elsewhere. */
export interface CpuTimes {
  /** idle + iowait */
  idle: number;
  /** Time the hypervisor ran other guests while this one wanted to run. */
  steal: number;
  total: number;
}

export function cpuTimes(): CpuTimes | undefined {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/)
      .slice(1).map(Number);
    // user nice system idle iowait irq softirq steal ...
    return {
      idle: fields[3] + (fields[4] ?? 0),
      steal: fields[7] ?? 0,
      total: fields.reduce((a, b) => a + b, 0),
    };
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system, ms, all threads) process `pid` has used so far, from Linux
 * /proc/<pid>/stat (10 ms ticks), or undefined elsewhere. Per request it moves less with
 * other load on the machine than a rate does.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after "(comm) ": state is field 3, utime 14, stime 15 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * The share of CPU time stolen between two samples: on a VM, the time the host ran other
 * guests while this one had work. It does not show while the machine is idle (nothing
 * wants to run), so it is measured during the phases; a run with a few percent of steal
 * measured a slower machine than one without, and its ratios drift with the host's load.
 */
export function stealShare(
  before: CpuTimes | undefined,
  after: CpuTimes | undefined = cpuTimes(),
): number | undefined {
  if (!before || !after) return undefined;
  return (after.steal - before.steal) / Math.max(1, after.total - before.total);
}

/** Steal share as a percentage for a progress line ("steal 3.2%"), or "" off Linux. */
export function stealText(share: number | undefined): string {
  return share === undefined ? "" : `, steal ${(share * 100).toFixed(1)}%`;
}

/** A warning line when the host stole more than `limit` of the CPU time during a phase. */
export function stealWarning(share: number | undefined, what: string, limit = 0.05): string {
  if (share === undefined || share <= limit) return "";
  return `# warning: the host stole ${
    (share * 100).toFixed(0)
  }% of this VM's CPU time during ${what}; its figures measured a slower, noisier machine`;
}

/** An idle share for a bench's header line ("0.99"), or "n/a" off Linux. */
export function idleText(idle: number | undefined): string {
  return idle === undefined ? "n/a" : idle.toFixed(2);
}

/** A warning line when the machine was busy before a bench (below 90% idle), else "". */
export function busyMachineWarning(idle: number | undefined): string {
  if (idle === undefined || idle >= 0.9) return "";
  return `# warning: the machine was only ${
    (idle * 100).toFixed(0)
  }% idle before this bench; another process skews its figures (check with vmstat 1)`;
}

/** The `--v8-flags=…` argument of deno.json's start task: benches start Deno children (brokers
 * and their baselines) with it, so they measure the broker as `deno task start` runs it. */
export const brokerDenoV8Flags = startTaskV8Flags;

/** Runs a Node.js load process (`node …args`) and resolves with the JSON of the last line
 * it prints on stdout; its stderr is shown unless `quiet`. */
export function runNodeJson<T>(args: string[], quiet = false): Promise<T> {
  const child = spawn("node", args, { stdio: ["ignore", "pipe", quiet ? "ignore" : "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => out += c);
    child.on("error", reject);
    child.on("close", () => {
      try {
        resolve(JSON.parse(out.trim().split("\n").at(-1)!) as T);
      } catch (err) {
        reject(err);
      }
    });
  });
}

/**
 * Requests/s autocannon (Node.js, its own process) reaches POSTing `bodyFile` to `url`, and
 * the requests it made, refusing any non-2xx; with `pid`, also the CPU µs that server
 * process spent per request meanwhile.
 */
export async function autocannonPost(
  url: string,
  bodyFile: string,
  connections: number,
  durationS: number,
  pid?: number,
): Promise<{ rate: number; requests: number; cpuUsPerReq: number | undefined }> {
  const cpuBefore = processCpuMs(pid);
  const cli = new URL("../node_modules/autocannon/autocannon.js", import.meta.url).pathname;
  const args = ["-c", String(connections), "-d", String(durationS), "-m", "POST"];
  const r = await runNodeJson<{
    non2xx: number;
    errors: number;
    requests: { average: number; total: number };
  }>([cli, ...args, "-i", bodyFile, "-j", url], true);
  if (r.non2xx > 0 || r.errors > 0) {
    throw new Error(`autocannon saw ${r.non2xx} non-2xx and ${r.errors} errors at ${url}`);
  }
  const cpuAfter = processCpuMs(pid);
  const cpuUsPerReq = cpuBefore === undefined || cpuAfter === undefined
    ? undefined
    : (cpuAfter - cpuBefore) * 1000 / Math.max(1, r.requests.total);
  return { rate: r.requests.average, requests: r.requests.total, cpuUsPerReq };
}
