// Where a broker process is in starting, for GET /readyz and the API's refusals: the port
// answers from the start, and while the store recovers, /readyz says how far it got (bytes
// scanned of at most how many, and an ETA) and every API call is refused with 503
// /problems/recovering.
import { BrokerError } from "./protocol/errors.ts";
import type { ReadinessInfo } from "./protocol/ops_types.ts";
import type { RecoveryProgress } from "../storage/recovery.ts";

export class Readiness {
  #phase: ReadinessInfo["phase"] = "starting";
  #progress: RecoveryProgress | undefined;

  recovering(): void {
    this.#phase = "recovering";
  }
  progress(p: RecoveryProgress): void {
    this.#progress = p;
  }
  ready(): void {
    this.#phase = "ready";
  }
  stopping(): void {
    this.#phase = "stopping";
  }

  info(): ReadinessInfo {
    const info: ReadinessInfo = { ready: this.#phase === "ready", phase: this.#phase };
    const p = this.#progress;
    if (this.#phase === "recovering") {
      const rate = p && p.elapsedMs > 0 ? p.scannedBytes / p.elapsedMs : 0;
      info.recovery = {
        scannedBytes: p?.scannedBytes ?? 0,
        totalBytes: p?.totalBytes ?? 0,
        etaSeconds: p && rate > 0
          ? Math.round((p.totalBytes - p.scannedBytes) / rate / 100) / 10
          : null,
      };
    }
    return info;
  }

  /** The refusal of an API call made before the broker serves. */
  refusal(): BrokerError {
    const r = this.info().recovery;
    return this.#phase === "recovering"
      ? new BrokerError(
        "RECOVERING",
        `Cannot answer yet: the broker is recovering its store (${
          r ? `${r.scannedBytes} of at most ${r.totalBytes} bytes scanned` : "starting"
        }); GET /readyz shows progress`,
      )
      : new BrokerError("BROKER_UNAVAILABLE", `Cannot answer: the broker is ${this.#phase}`);
  }
}
