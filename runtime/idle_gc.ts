// Gives memory back when the process goes idle, as a browser's memory reducer does: V8
// keeps the young generation it grew during start-up and the first requests (4.25 MiB
// committed on an idle broker) and never shrinks it without a memory-reducing collection,
// which nothing in Deno asks for. Once the process has been busy (start-up counts) and then
// used under `cpuPercent` of a core for a whole window, it runs one such collection (~25 ms on Deno:
// −4.8 MiB anonymous, bench/README.md "Round 7 … idle collection"), then waits for work
// and another idle window, never more often than `intervalMs`.
import { clearInterval, setInterval } from "node:timers";
import { family } from "./protocol/prom_text.ts";

export interface IdleGcOptions {
  /** The length of a window (idleGcMs); 0 turns the collector off. */
  windowMs: number;
  /** The least time between two collections (idleGcIntervalMs). */
  intervalMs: number;
  /** A window is idle when the process used less than this share of one core (percent). */
  cpuPercent: number;
  /** The runtime's memory-reducing full collection (Platform.collectGarbage). */
  collect: () => void;
  /** The process's CPU time so far, user and system, in µs. */
  cpuMicros: () => number;
  nowMs: () => number;
  /** Runs `tick` every `ms` until stopped; unref'd timers by default. */
  every?: (ms: number, tick: () => void) => { stop(): void };
}

/** In the window after a collection, work counts only past this many times the idle limit
 * (the helpers' sweeping measured 4.6 ms in a 100 ms window, 2.3 times its 2 ms limit). */
const SETTLING_BUSY = 5;

export class IdleGc {
  /** Collections run so far (mq_idle_gc_total). */
  collections = 0;
  /** How long the last one took, in ms. */
  lastMs = 0;
  readonly #o: IdleGcOptions;
  #timer: { stop(): void } | undefined;
  #cpuAt = 0;
  #lastAt = -Infinity;
  /** Work since the last collection: start-up counts. */
  #armed = true;
  /** The window after a collection: V8's helper threads still sweep and free for it. */
  #settling = false;

  constructor(options: IdleGcOptions) {
    this.#o = options;
  }

  start(): void {
    if (this.#o.windowMs === 0 || this.#timer) return;
    this.#cpuAt = this.#o.cpuMicros();
    this.#timer = (this.#o.every ?? unrefEvery)(this.#o.windowMs, () => this.tick());
  }

  stop(): void {
    this.#timer?.stop();
    this.#timer = undefined;
  }

  /** Ends a window: collects if it was idle after work and the interval has passed. */
  tick(): void {
    const o = this.#o;
    const cpu = o.cpuMicros();
    const used = cpu - this.#cpuAt;
    this.#cpuAt = cpu;
    const busy = o.windowMs * 10 * o.cpuPercent; // µs: windowMs × 1000 × percent / 100
    if (this.#settling) {
      // V8's helpers sweeping for the collection: a few times `busy` at most; more is traffic.
      this.#settling = false;
      if (used >= SETTLING_BUSY * busy) this.#armed = true;
      return;
    }
    if (used >= busy) {
      this.#armed = true;
      return;
    }
    const now = o.nowMs();
    if (!this.#armed || now - this.#lastAt < o.intervalMs) return;
    o.collect();
    this.lastMs = o.nowMs() - now;
    this.collections++;
    this.#lastAt = now;
    this.#armed = false;
    this.#settling = true;
    this.#cpuAt = o.cpuMicros(); // the collection's own CPU is not work
  }
}

function unrefEvery(ms: number, tick: () => void): { stop(): void } {
  const id = setInterval(tick, ms);
  id.unref();
  return { stop: () => clearInterval(id) };
}

/** The collector's counters for /metrics. */
export function idleGcLines(gc: IdleGc): string[] {
  return [
    ...family(
      "mq_idle_gc_total",
      "counter",
      "Memory-reducing collections run while the process was idle (idleGcMs).",
      gc.collections,
    ),
    ...family(
      "mq_idle_gc_last_seconds",
      "gauge",
      "How long the last idle collection took.",
      gc.lastMs / 1000,
    ),
  ];
}
