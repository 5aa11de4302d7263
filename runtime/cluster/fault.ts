// Which broker groups just failed, as RocketMQ's LatencyFaultTolerance keeps it
// (reference/rocketmq.md §12): a call that fails because of the group (unreachable, not
// the leader, a 5xx) marks the group unavailable for clusterFaultBackoffMs; round-robin
// produce and POP sweeps skip it while any other group is available. A success clears it,
// and so does a new master: a fault is the master's at its epoch (the lease's fencing
// token), so a route that shows the group at a higher epoch (its slave took over) makes
// it available at once.
import { BrokerError } from "../protocol/errors.ts";

export class FaultTracker {
  readonly #faults = new Map<string, { until: number; epoch: number }>();

  constructor(
    private readonly backoffMs: number,
    private readonly enabled: boolean,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** `epoch`: the epoch of the group's master the call went to (GroupLink.epoch). */
  failed(group: string, epoch = 0): void {
    if (this.enabled && this.backoffMs > 0) {
      this.#faults.set(group, { until: this.nowMs() + this.backoffMs, epoch });
    }
  }

  succeeded(group: string): void {
    if (this.#faults.size > 0) this.#faults.delete(group);
  }

  /** `epoch`: the epoch the route shows the group's master at now. */
  available(group: string, epoch = 0): boolean {
    const fault = this.#faults.get(group);
    if (fault === undefined) return true;
    if (this.nowMs() >= fault.until || epoch > fault.epoch) {
      this.#faults.delete(group);
      return true;
    }
    return false;
  }
}

/** True when `err` says the group (not the request) is at fault: retry elsewhere, re-read
 * the route. BrokerErrors below 500 are the caller's and go back unchanged; so do the 504s
 * (FLUSH_TIMEOUT, REPLICATION_TIMEOUT): the message may be stored, as RocketMQ returns
 * FLUSH_DISK_TIMEOUT and FLUSH_SLAVE_TIMEOUT instead of retrying. A call the caller ended
 * (its signal aborted, its own timeout: AbortError / TimeoutError) is not the group's
 * fault either: no backoff, no route dropped. */
export function isGroupFailure(err: unknown): boolean {
  if (err instanceof BrokerError) return err.status >= 500 && err.status !== 504;
  return !isCallerAbort(err); // a fetch TypeError, a reset connection, a closed broker
}

/** An AbortError or TimeoutError: the caller gave up (client/http.ts rethrows the signal's
 * reason as it is). */
export function isCallerAbort(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return name === "AbortError" || name === "TimeoutError";
}

/** Codes a group answers when it is not the place to write now, though another group of
 * the topic may be: drained or read-only (TOPIC_PERMISSION_DENIED), the topic not (yet or
 * any more) on it (TOPIC_NOT_FOUND). RocketMQ's producer retries NO_PERMISSION,
 * TOPIC_NOT_EXIST and SYSTEM_BUSY on another broker (reference/rocketmq.md §12; busy is a
 * 503 here, a group failure already); the route is re-read first. */
const MOVE_ON = new Set(["TOPIC_PERMISSION_DENIED", "TOPIC_NOT_FOUND"]);

/** True when an unkeyed produce that failed with `err` may be sent to another group. */
export function isRetryElsewhere(err: unknown): boolean {
  return isGroupFailure(err) || (err instanceof BrokerError && MOVE_ON.has(err.code));
}

/** Refusals a broker answers before it stores anything (its role, its store, its replicas). */
const REFUSED_BEFORE_STORING = new Set([
  "NOT_LEADER",
  "STORE_NOT_WRITABLE",
  "RECOVERING",
  "REPLICAS_NOT_AVAILABLE",
  "BROKER_UNAVAILABLE",
]);

/** True when an unkeyed produce that failed with `err` may go to another group: the group
 * said it stored nothing, or no byte of the request reached it (the SDK's requestSent:
 * false). A failure whose outcome is unknown (a connection reset after the request left, a
 * 500, anything not a BrokerError) is not sent again elsewhere: the first group may have
 * stored it, and a second copy would be a duplicate the producer never asked for
 * (reliability.md P4). The producer gets the error and decides, with an Idempotency-Key. */
export function isSendElsewhere(err: unknown): boolean {
  if (!(err instanceof BrokerError)) return false;
  if (err.extensions.requestSent === "unknown") return false;
  return REFUSED_BEFORE_STORING.has(err.code) || MOVE_ON.has(err.code);
}
