// MetadataFollower: a slave's loop that fetches, decodes and applies its master's metadata
// snapshot on an interval (RocketMQ's SlaveSynchronize); the rounds, not the snapshot's shape.
import { clearTimeout, setTimeout } from "node:timers";
import { assert } from "../../storage/errors.ts";
import type { Logger } from "../log.ts";
import { decodeSnapshot, type MetadataSnapshot, MetadataSyncError } from "./metadata_snapshot.ts";

export interface MetadataFollowerOptions {
  /** The master's encoded snapshot. The signal aborts when stop() is called. */
  fetchSnapshot: (signal: AbortSignal) => Promise<Uint8Array>;
  /** Stores a decoded, checked snapshot: importMetadata, then reload what memory holds. */
  apply: (snapshot: MetadataSnapshot) => Promise<void>;
  /** ms from the end of one round to the start of the next (the broker's haMetadataSyncIntervalMs). */
  intervalMs: number;
  log: Logger;
  /** Wall-clock ms, for lastSyncedAtMs. */
  nowMs: () => number;
  /** Each failed round's error, as it happens; the follower retries on its own. */
  onError?: (error: unknown) => void;
  /** Largest snapshot accepted. Default METADATA_SNAPSHOT_BYTES_MAX. */
  bytesMax?: number;
}

/**
 * A slave's SlaveSynchronize for metadata: one round (fetch, decode, apply) right after
 * start() and then intervalMs after each round ends, so rounds never overlap. A failed round
 * is logged, kept in lastError and retried at the next interval; nothing escapes the loop.
 */
export class MetadataFollower {
  readonly #options: MetadataFollowerOptions;
  #state: "IDLE" | "STARTED" | "STOPPED" = "IDLE";
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Rounds run one after another; this settles when the last one queued has. */
  #tail: Promise<void> = Promise.resolve();
  readonly #abort = new AbortController();
  #lastSyncedAtMs: number | undefined;
  #lastError: unknown;

  constructor(options: MetadataFollowerOptions) {
    assert(Number.isInteger(options.intervalMs) && options.intervalMs > 0, "interval is ms > 0");
    this.#options = options;
  }

  /** Local wall-clock ms when the last successful round ended; undefined before one. */
  get lastSyncedAtMs(): number | undefined {
    return this.#lastSyncedAtMs;
  }

  /** The error of the latest round; undefined once a round succeeds. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /** Runs the first round now and the next ones on the interval, until stop(). The timer is
   * unref'd: it does not keep the process alive. */
  start(): void {
    assert(this.#state === "IDLE", "metadata follower starts once");
    this.#state = "STARTED";
    this.#loop();
  }

  /** One round after any in flight; rejects with its error (also logged and kept in
   * lastError), or FOLLOWER_STOPPED after stop(). */
  async syncNow(): Promise<void> {
    const error = await this.#enqueue();
    if (error !== undefined) throw error;
  }

  /** Aborts a fetch in flight, waits for the round in flight and leaves no timer.
   * Idempotent. */
  async stop(): Promise<void> {
    if (this.#state !== "STOPPED") {
      this.#state = "STOPPED";
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#abort.abort(stoppedError());
    }
    await this.#tail;
  }

  #loop(): void {
    this.#timer = undefined;
    void this.#enqueue().then(() => {
      if (this.#state !== "STARTED") return;
      this.#timer = setTimeout(() => this.#loop(), this.#options.intervalMs);
      this.#timer.unref();
    });
  }

  /** Queues a round; resolves with its error or undefined, never rejects. */
  #enqueue(): Promise<unknown> {
    const round = this.#tail.then(() => this.#round());
    this.#tail = round.then(() => {});
    return round;
  }

  async #round(): Promise<unknown> {
    if (this.#state === "STOPPED") return stoppedError();
    const { fetchSnapshot, apply, log, nowMs, bytesMax } = this.#options;
    const signal = this.#abort.signal;
    let snapshot: MetadataSnapshot;
    try {
      const bytes = await fetchSnapshot(signal);
      snapshot = decodeSnapshot(bytes, { bytesMax });
    } catch (error) {
      // An abort is stop()'s doing, not a failure of the master.
      if (signal.aborted) return stoppedError();
      return this.#failed(error);
    }
    // Stopped during the fetch: the caller may be closing the database.
    if (this.#isStopped()) return stoppedError();
    try {
      await apply(snapshot);
    } catch (error) {
      return this.#failed(error);
    }
    this.#lastSyncedAtMs = nowMs();
    this.#lastError = undefined;
    let rows = 0;
    for (const tableRows of Object.values(snapshot.tables)) rows += tableRows.length;
    log("debug", "metadata synced", { takenAtMs: snapshot.takenAtMs, rows });
    return undefined;
  }

  /** A method, not a comparison in place: TypeScript keeps the narrowing across awaits. */
  #isStopped(): boolean {
    return this.#state === "STOPPED";
  }

  #failed(error: unknown): unknown {
    // Repeats of the same failure (a master down) are debug; the first is a warning.
    const repeat = this.#lastError !== undefined && String(this.#lastError) === String(error);
    this.#lastError = error;
    this.#options.log(
      repeat ? "debug" : "warn",
      "metadata sync failed; retrying at the next interval",
      {
        err: String(error),
        intervalMs: this.#options.intervalMs,
      },
    );
    try {
      this.#options.onError?.(error);
    } catch (hookError) {
      this.#options.log("error", "metadata sync onError threw", { err: String(hookError) });
    }
    return error;
  }
}

function stoppedError(): MetadataSyncError {
  return new MetadataSyncError("FOLLOWER_STOPPED", "Cannot sync metadata as the follower stopped");
}
