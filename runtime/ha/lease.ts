// Leadership of a broker group by a lease in KV (issue #7; reliability.md §6.7): one
// LeaseKeeper per broker either holds the group's lease and renews it, or watches it as a
// candidate and takes it, with the next epoch, once it has expired and the election rule
// (election.ts) names this broker.
//
// Safety rests on three things:
//
// 1. Compare-and-set. Every take, renew and release is a CAS on the record's versionstamp
//    (lease_store.ts), so two candidates never both win one epoch, and a holder whose
//    record changed under it knows it has lost.
// 2. A monotonic deadline on the holder. A renew that starts at monotonic time S writes
//    expiresAtMs = wall(S) + leaseTtlMs; when it succeeds the holder's deadline becomes
//    S + leaseTtlMs - leaseSafetyMarginMs. isLeader() is true only before that deadline,
//    and onLost fires when it passes, so the holder stops leadership at least the margin
//    before its record expires. A renew that times out may have been applied (ambiguous)
//    but does not move the deadline: only a confirmed renew does, from its start.
// 3. Candidates wait for the margin too: they take only once their own wall clock passes
//    expiresAtMs + leaseSafetyMarginMs. Between the holder stepping down (monotonic) and a
//    candidate stepping up (wall) lie 2 x margin, so wall clocks that disagree by less
//    than the margin (with room to spare for the holder's reaction time) never yield two
//    leaders. A paused holder (GC, SIGSTOP) can still act after its deadline when it
//    wakes, if it acts without asking isLeader(): the epoch, a fencing token, is what
//    stops its late writes (replicas and route readers refuse lower epochs).
//
// How the broker uses it:
// - Before acknowledging a write as master, check isLeader() (cheap: one clock read).
//   Do not cache it; onLost may be late when the event loop is blocked.
// - onAcquired({epoch}): become master at that epoch: stamp every replication frame,
//   the replication high-water mark and the route entry (RouteEntry.epoch) with it.
//   Replicas and route readers remember the highest epoch seen and refuse lower ones.
// - onLost({epoch, reason}): stop acknowledging writes at once (answer 503, "not
//   leader"), stop sending replication frames of that epoch, become a replica.
// - The epoch changes only when the owner changes: a holder that fell past its deadline
//   but finds the record still its own (nobody wrote in between) takes it back at the
//   same epoch, and onAcquired fires again with it, unless some replica has published a
//   higher epoch (then the record is a late write the KV replayed: an election follows).
// - A peer that shows a higher epoch than the one held (replication's handshake):
//   call supersede(epoch). The keeper steps down, expires the record, and never takes
//   that epoch or a lower one again.
// - eligibility() reports this replica's newest epoch, max CommitLog offset and whether
//   it is in the master's SyncStateSet; it is published to the group every poll.
//
// Defaults (LeaseSettings): leaseTtlMs 10 s; leaseSafetyMarginMs 2 s (allowed clock
// skew and holder reaction time); renew every TTL/3 (3.3 s); candidates poll every
// TTL/10 (1 s); each store call times out after TTL/5 (2 s). Worst-case failover after
// a crash: TTL + margin + one poll (13 s); after release(): one poll. KV traffic: each
// broker writes its replica state once a poll (candidates) or renew (holder).
import { type ReplicaState } from "./election.ts";
import { type CandidateKeeper, candidateStep } from "./lease_candidate.ts";
import { type LeaseSettings, leaseSettings } from "./lease_rules.ts";
import type { LeaseRecord } from "./lease_store.ts";
import type { Holding, LeaseHolding, LeaseKeeperOptions, LeaseLostReason } from "./lease_types.ts";
import { StoreCalls, type StoreOutcome } from "./store_calls.ts";

export { LeaseConfigError } from "./lease_rules.ts";
export { type LeaseSettings, leaseSettings };

export type {
  LeaseClock,
  LeaseHolding,
  LeaseKeeperOptions,
  LeaseLostReason,
  ReplicaEligibility,
} from "./lease_types.ts";

export class LeaseKeeper {
  readonly settings: LeaseSettings;
  readonly session: string;
  readonly #o: LeaseKeeperOptions;
  readonly #calls: StoreCalls;
  readonly #startedMonotonicMs: number;
  #running = false;
  #loop: Promise<void> | undefined;
  #holding: Holding | null = null;
  #lastSeen: LeaseRecord | null = null;
  #wake: (() => void) | undefined;
  /**
   * The highest epoch some replica is known to have reached beyond a record of ours
   * (supersede(), or published states seen by a take-back): no take at or below it.
   */
  #passedEpoch = 0;
  /** This keeper as its candidate polls see it (lease_candidate.ts). */
  readonly #candidate: CandidateKeeper;

  constructor(options: LeaseKeeperOptions) {
    this.#o = options;
    this.settings = leaseSettings(options.settings);
    this.session = options.session ?? crypto.randomUUID();
    this.#calls = new StoreCalls(options.clock, this.settings);
    this.#startedMonotonicMs = options.clock.monotonicMs();
    this.#candidate = {
      options,
      settings: this.settings,
      startedMonotonicMs: this.#startedMonotonicMs,
      passedEpoch: () => this.#passedEpoch,
      setPassedEpoch: (epoch) => this.#passedEpoch = epoch,
      running: () => this.#running,
      call: (fn) => this.#call(fn),
      publish: () => this.#publish(),
      seen: (record) => this.#lastSeen = record,
      isMine: (record) => this.#isMine(record),
      take: (current, version, epoch) => this.#take(current, version, epoch),
      expire: (record, version) => this.#expire(record, version),
    };
  }

  /** Starts the loop; as a candidate first. */
  start(): void {
    if (this.#running || this.#loop !== undefined) throw new Error("LeaseKeeper already started");
    this.#running = true;
    this.#loop = this.#run();
  }

  /** True only while this broker holds the lease and its monotonic deadline is ahead. */
  isLeader(): boolean {
    const h = this.#holding;
    return this.#running && h !== null &&
      this.#o.clock.monotonicMs() < h.deadlineMonotonicMs;
  }

  /** The fencing token of the current holding; undefined when not leader. */
  get epoch(): number | undefined {
    return this.isLeader() ? this.#holding!.record.epoch : undefined;
  }

  holding(): LeaseHolding | null {
    if (!this.isLeader()) return null;
    const h = this.#holding!;
    return { epoch: h.record.epoch, deadlineMonotonicMs: h.deadlineMonotonicMs };
  }

  /** The lease record as last read or written (who is master, as far as we know). */
  lastSeenRecord(): LeaseRecord | null {
    return this.#lastSeen;
  }

  /** Store calls still pending, including ones given up on after a timeout. */
  get storeCallsInFlight(): number {
    return this.#calls.inFlight;
  }

  /**
   * Resolves when no store call is pending. A KV client may retry a call for as long as
   * the KV is unreachable, so await this (with a bound) before closing the KV.
   */
  whenStoreIdle(): Promise<void> {
    return this.#calls.whenIdle();
  }

  /**
   * Ends the loop and every timer; fires onLost if leader. The record stays as it is, so
   * others take over only when it expires (use release() to hand over at once).
   */
  async stop(): Promise<void> {
    if (!this.#running) return await this.#loop;
    this.#running = false;
    this.#calls.abandonAll();
    this.#wake?.();
    await this.#loop;
    this.#stepDown("STOPPED");
  }

  /**
   * stop(), then marks the record expired (CAS, same epoch, expiresAtMs 0) and removes
   * this broker's replica state, so a peer takes over at its next poll. True when the
   * record was released; false when it was not ours or the store did not confirm.
   */
  async release(): Promise<boolean> {
    const known = this.#holding;
    await this.stop();
    const calls = this.#calls;
    const { store, brokerGroup, brokerId } = this.#o;
    await calls.run(() => store.removeReplica(brokerGroup, brokerId));
    let target = known === null ? null : { record: known.record, version: known.version };
    for (let attempt = 0; attempt < 2; attempt++) {
      if (target === null) {
        const read = await calls.run(() => store.readLease(brokerGroup));
        if (read.kind !== "ok" || !this.#isMine(read.value.record)) return false;
        target = { record: read.value.record!, version: read.value.version! };
      }
      const released = { ...target.record, expiresAtMs: 0 };
      const write = await calls.run(() => store.writeLease(brokerGroup, target!.version, released));
      if (write.kind === "ok" && write.value.ok) {
        this.#lastSeen = released;
        return true;
      }
      if (write.kind !== "ok") return false;
      target = null; // refused: perhaps our own ambiguous renew landed; read and retry once
    }
    return false;
  }

  /**
   * A peer showed `epoch`, above the epoch held: some replica followed a later master.
   * The record can name this broker then only because the KV lost writes and replayed a
   * late one of ours (or a restarted KV matched an old compare-and-set by chance), and
   * holding on would leave the group without a master for good, every replica refusing
   * our lower epoch. So: step down (onLost, "SUPERSEDED"), expire the record so the
   * group elects at its next poll, and never take an epoch at or below `epoch` again.
   * True when this keeper was holding a lower epoch.
   */
  supersede(epoch: number): boolean {
    this.#passedEpoch = Math.max(this.#passedEpoch, epoch);
    const h = this.#holding;
    if (h === null || h.record.epoch >= epoch) return false;
    this.#stepDown("SUPERSEDED");
    void this.#expire(h.record, h.version);
    this.#wake?.();
    return true;
  }

  /** CAS our record to expired (expiresAtMs 0, same epoch): peers may elect at once. */
  async #expire(record: LeaseRecord, version: string | null): Promise<void> {
    const { store, brokerGroup } = this.#o;
    const expired = { ...record, expiresAtMs: 0 };
    const write = await this.#call(() => store.writeLease(brokerGroup, version, expired));
    if (write.kind === "ok" && write.value.ok) this.#lastSeen = expired;
  }

  /** A store call from the loop; none starts once stop() has begun. */
  #call<T>(fn: () => Promise<T>): Promise<StoreOutcome<T>> {
    if (!this.#running) return Promise.resolve({ kind: "abandoned" });
    return this.#calls.run(fn);
  }

  async #run(): Promise<void> {
    // Store failures arrive as outcomes (store_calls.ts), not exceptions; what throws
    // here is a bug (ours, or a callback's), and it rejects the loop: a crash.
    while (this.#running) {
      const delayMs = this.#holding !== null
        ? await this.#renewStep()
        : await candidateStep(this.#candidate);
      if (this.#running && delayMs > 0) await this.#sleep(delayMs);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.#o.clock.setTimer(ms, () => done());
      const done = () => {
        cancel();
        this.#wake = undefined;
        resolve();
      };
      this.#wake = done;
    });
  }

  /** One renew as holder; returns the delay before the next step. */
  async #renewStep(): Promise<number> {
    const h = this.#holding!;
    const { clock, store, brokerGroup } = this.#o;
    if (clock.monotonicMs() >= h.deadlineMonotonicMs) {
      this.#stepDown("DEADLINE_PASSED");
      return 0;
    }
    const startedMs = clock.monotonicMs();
    const next = { ...h.record, expiresAtMs: clock.wallMs() + this.settings.leaseTtlMs };
    const write = await this.#call(() => store.writeLease(brokerGroup, h.version, next));
    if (this.#holding !== h) return 0; // lost meanwhile (deadline timer) or stopped
    if (write.kind === "ok" && write.value.ok) {
      this.#extend(h, next, write.value.version, startedMs);
      await this.#publish();
      return Math.max(0, startedMs + this.settings.leaseRenewIntervalMs - clock.monotonicMs());
    }
    if (write.kind !== "ok") return this.settings.leasePollIntervalMs; // ambiguous: retry
    return await this.#afterRefusedRenew(h);
  }

  /**
   * A refused renew: someone wrote the record since our last confirmed write. If it was
   * our own renew whose answer we never got, adopt its version and renew again at once
   * (the deadline stays where the last confirmed renew put it). Otherwise, or when the
   * read fails too, step down rather than guess.
   */
  async #afterRefusedRenew(h: Holding): Promise<number> {
    const { store, brokerGroup } = this.#o;
    const read = await this.#call(() => store.readLease(brokerGroup));
    if (this.#holding !== h) return 0;
    if (read.kind === "ok") this.#lastSeen = read.value.record;
    const mine = read.kind === "ok" && this.#isMine(read.value.record) &&
      read.value.record!.epoch === h.record.epoch;
    if (!mine) {
      this.#stepDown("LEASE_TAKEN");
      return this.settings.leasePollIntervalMs;
    }
    h.record = read.value.record!;
    h.version = read.value.version!;
    return 0;
  }

  /**
   * CAS the record to ours at `epoch`, from `version`. Used for a takeover and to take
   * back a record that is still ours (after an ambiguous take, or a missed deadline).
   */
  async #take(
    current: LeaseRecord | null,
    version: string | null,
    epoch: number,
  ): Promise<number> {
    const { clock, store, brokerGroup, brokerId, address } = this.#o;
    const startedMs = clock.monotonicMs();
    const record: LeaseRecord = {
      owner: brokerId,
      address,
      epoch,
      expiresAtMs: clock.wallMs() + this.settings.leaseTtlMs,
      session: this.session,
    };
    const write = await this.#call(() => store.writeLease(brokerGroup, version, record));
    if (write.kind !== "ok" || !write.value.ok || !this.#running) {
      return this.settings.leasePollIntervalMs; // ambiguous ones show up as ours next poll
    }
    const h: Holding = {
      record,
      version: write.value.version,
      deadlineMonotonicMs: 0,
      cancelDeadline: () => {},
    };
    this.#holding = h;
    this.#extend(h, record, write.value.version, startedMs);
    if (!this.isLeader()) {
      this.#holding = null; // the take was confirmed after its own deadline
      h.cancelDeadline();
      return 0;
    }
    this.#o.log?.("info", "lease acquired", {
      brokerGroup,
      epoch,
      previousEpoch: current?.epoch ?? null,
    });
    this.#o.onAcquired?.({ epoch, deadlineMonotonicMs: h.deadlineMonotonicMs });
    await this.#publish();
    return Math.max(0, startedMs + this.settings.leaseRenewIntervalMs - clock.monotonicMs());
  }

  /** A confirmed write that started at `startedMs`: move the deadline, re-arm its timer. */
  #extend(h: Holding, record: LeaseRecord, version: string, startedMs: number): void {
    const { clock } = this.#o;
    h.record = record;
    h.version = version;
    h.deadlineMonotonicMs = startedMs + this.settings.leaseTtlMs -
      this.settings.leaseSafetyMarginMs;
    this.#lastSeen = record;
    h.cancelDeadline();
    const inMs = h.deadlineMonotonicMs - clock.monotonicMs();
    if (inMs <= 0) return;
    h.cancelDeadline = clock.setTimer(inMs, () => {
      if (this.#holding === h && clock.monotonicMs() >= h.deadlineMonotonicMs) {
        this.#stepDown("DEADLINE_PASSED");
      }
    });
  }

  #stepDown(reason: LeaseLostReason): void {
    const h = this.#holding;
    if (h === null) return;
    this.#holding = null;
    h.cancelDeadline();
    this.#o.log?.("warn", "lease lost", {
      brokerGroup: this.#o.brokerGroup,
      epoch: h.record.epoch,
      reason,
    });
    this.#o.onLost?.({ epoch: h.record.epoch, reason });
  }

  /** Publishes this replica's state; returns it, or undefined when eligibility() failed. */
  async #publish(): Promise<ReplicaState | undefined> {
    const { clock, store, brokerGroup, brokerId, address } = this.#o;
    const got = await this.#call(() => Promise.resolve(this.#o.eligibility()));
    if (got.kind !== "ok") return undefined;
    const state: ReplicaState = {
      brokerId,
      address,
      epoch: got.value.epoch,
      maxOffset: got.value.maxOffset,
      inSync: got.value.inSync,
      priority: this.settings.brokerElectionPriority,
      updatedAtMs: clock.wallMs(),
    };
    await this.#call(() => store.publishReplica(brokerGroup, state));
    return state;
  }

  #isMine(record: LeaseRecord | null): boolean {
    return record !== null && record.owner === this.#o.brokerId &&
      record.session === this.session;
  }
}
