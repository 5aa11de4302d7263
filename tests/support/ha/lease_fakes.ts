// Test doubles for the lease keeper: a manual clock (monotonic time moves only when a
// test says so; each broker may see its own skewed wall clock) and an in-memory
// LeaseStore whose calls can hang, lose their answers after being applied, or wait at a
// gate that a test (or fast-check's scheduler) opens.
import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import type { ReplicaState } from "../../../runtime/ha/election.ts";
import type { LeaseClock } from "../../../runtime/ha/lease.ts";
import type {
  LeaseRead,
  LeaseRecord,
  LeaseStore,
  LeaseWriteResult,
} from "../../../runtime/ha/lease_store.ts";

/** Wall time at monotonic 0: any fixed date works. */
export const WALL_AT_ZERO_MS = Date.UTC(2026, 11, 1);

/** Runs every pending microtask (and what they chain) by waiting one macrotask. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class ManualClock {
  #nowMs = 0;
  #nextId = 0;
  readonly #timers = new Map<number, { atMs: number; fn: () => void }>();

  get monotonicNowMs(): number {
    return this.#nowMs;
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** One broker's clock: shared monotonic time and timers, wall clock off by `skewMs`. */
  view(skewMs = 0): LeaseClock {
    return {
      monotonicMs: () => this.#nowMs,
      wallMs: () => WALL_AT_ZERO_MS + this.#nowMs + skewMs,
      setTimer: (ms, fn) => {
        assert(ms >= 0);
        const id = this.#nextId++;
        this.#timers.set(id, { atMs: this.#nowMs + ms, fn });
        return () => void this.#timers.delete(id);
      },
    };
  }

  /** Moves time forward by `ms`, firing due timers in time order, flushing after each. */
  async advance(ms: number): Promise<void> {
    assert(ms >= 0);
    const endMs = this.#nowMs + ms;
    await flush();
    for (;;) {
      let next: [number, { atMs: number; fn: () => void }] | undefined;
      for (const t of this.#timers) if (next === undefined || t[1].atMs < next[1].atMs) next = t;
      if (next === undefined || next[1].atMs > endMs) break;
      this.#timers.delete(next[0]);
      this.#nowMs = Math.max(this.#nowMs, next[1].atMs);
      next[1].fn();
      await flush();
    }
    this.#nowMs = endMs;
    await flush();
  }

  /** advance() in steps of `stepMs`, calling `check` after each; for "first time when". */
  async advanceBy(ms: number, stepMs: number, check: () => void): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      await this.advance(Math.min(stepMs, ms - done));
      check();
    }
  }
}

/** A committed lease write, for checking epochs after a run. */
export interface LeaseHistoryEntry {
  brokerGroup: string;
  record: LeaseRecord;
  version: string;
}

/** The data several MemoryLeaseStores (one per broker) share. */
export class MemoryLeaseData {
  readonly leases = new Map<string, { record: LeaseRecord; version: string }>();
  readonly replicas = new Map<string, ReplicaState>();
  readonly history: LeaseHistoryEntry[] = [];
  #version = 0;

  nextVersion(): string {
    this.#version++;
    return String(this.#version).padStart(20, "0");
  }

  /** Writes a record as someone outside the keepers would (an operator, a bug). */
  overwrite(brokerGroup: string, record: LeaseRecord): void {
    const version = this.nextVersion();
    this.leases.set(brokerGroup, { record: { ...record }, version });
    this.history.push({ brokerGroup, record: { ...record }, version });
  }
}

/** One broker's view of MemoryLeaseData, with its own faults. */
export class MemoryLeaseStore implements LeaseStore {
  /** While true, new calls hang until releaseHung(). */
  hang = false;
  /** The next this many lease writes are applied, then hang (their answer is lost). */
  loseWriteAnswers = 0;
  /** Awaited before a call is applied; fast-check's scheduler orders calls through it. */
  gate: ((what: string) => Promise<void>) | undefined;
  calls = 0;
  readonly #hung = new Set<(error: Error) => void>();

  constructor(readonly data: MemoryLeaseData) {}

  get hungCalls(): number {
    return this.#hung.size;
  }

  /** Hung calls fail now (as a connection reset would), so they settle. */
  releaseHung(): void {
    for (const reject of [...this.#hung]) reject(new Error("connection reset (test)"));
    this.#hung.clear();
  }

  readLease(brokerGroup: string): Promise<LeaseRead> {
    return this.#call("readLease", () => {
      const found = this.data.leases.get(brokerGroup);
      return found === undefined
        ? { record: null, version: null }
        : { record: { ...found.record }, version: found.version };
    });
  }

  async writeLease(
    brokerGroup: string,
    expectedVersion: string | null,
    record: LeaseRecord,
  ): Promise<LeaseWriteResult> {
    const result = await this.#call("writeLease", () => {
      const found = this.data.leases.get(brokerGroup);
      if ((found?.version ?? null) !== expectedVersion) return { ok: false } as const;
      const version = this.data.nextVersion();
      this.data.leases.set(brokerGroup, { record: { ...record }, version });
      this.data.history.push({ brokerGroup, record: { ...record }, version });
      return { ok: true, version } as const;
    });
    if (this.loseWriteAnswers > 0) {
      this.loseWriteAnswers--;
      return await this.#hangForever<LeaseWriteResult>();
    }
    return result;
  }

  publishReplica(brokerGroup: string, state: ReplicaState): Promise<void> {
    return this.#call("publishReplica", () => {
      this.data.replicas.set(`${brokerGroup}/${state.brokerId}`, { ...state });
    });
  }

  readReplicas(brokerGroup: string): Promise<ReplicaState[]> {
    return this.#call("readReplicas", () =>
      [...this.data.replicas.entries()]
        .filter(([k]) => k.startsWith(`${brokerGroup}/`))
        .map(([, s]) => ({ ...s })));
  }

  removeReplica(brokerGroup: string, brokerId: number): Promise<void> {
    return this.#call("removeReplica", () => {
      this.data.replicas.delete(`${brokerGroup}/${brokerId}`);
    });
  }

  async #call<T>(what: string, apply: () => T): Promise<T> {
    this.calls++;
    if (this.hang) return await this.#hangForever<T>();
    if (this.gate !== undefined) await this.gate(what);
    if (this.hang) return await this.#hangForever<T>();
    return apply();
  }

  #hangForever<T>(): Promise<T> {
    return new Promise<T>((_resolve, reject) => {
      this.#hung.add(reject);
    });
  }
}
