// Server-side renewal of auto_renew receives (PushConsumer; reference/rocketmq-grpc.md
// §4.2), as RocketMQ's proxy renews the receipt handles it hands out: each message is
// leased for grpcAutoRenewMs and, while the client holds it, its invisible time is pushed
// out again when half the lease is left (ConsumerApi.nack with the lease: our receipt
// handles stay valid), until it is acked, given back (ChangeInvisibleDuration), buried,
// its client terminates, or grpcAutoRenewMaxMs passes. Bounded by grpcAutoRenewHeldMax.
import type { BrokerClient } from "../../runtime/protocol/core_api.ts";
import type { ApiSource } from "../routes/route.ts";

interface Held {
  group: string;
  clientId: string;
  renewAt: number;
  until: number;
  renewing: boolean;
}

export interface AutoRenewOptions {
  api: ApiSource<BrokerClient>;
  /** deps.ts's Log (not imported: deps.ts imports this module). */
  log: (level: "debug", msg: string, fields?: Record<string, unknown>) => void;
  nowMs: () => number;
  leaseMs: number;
  maxMs: number;
  heldMax: number;
}

export class AutoRenew {
  #held = new Map<string, Held>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(readonly options: AutoRenewOptions) {}

  /** Messages `clientId` received with auto_renew, each leased for `leaseMs`. */
  hold(group: string, clientId: string, handles: string[], leaseMs: number): void {
    if (this.#closed) return;
    const now = this.options.nowMs();
    for (const handle of handles) {
      if (this.#held.size >= this.options.heldMax) break;
      this.#held.set(handle, {
        group,
        clientId,
        renewAt: now + leaseMs / 2,
        until: now + this.options.maxMs,
        renewing: false,
      });
    }
    if (this.#held.size > 0 && !this.#timer) {
      this.#timer = setInterval(() => this.#tick(), Math.max(100, this.options.leaseMs / 8));
    }
  }

  /** The client settled the message: no more renewals. */
  release(handle: string): void {
    this.#held.delete(handle);
  }

  /** The client is gone: its messages come back when their lease ends. */
  releaseClient(clientId: string): void {
    for (const [handle, h] of this.#held) if (h.clientId === clientId) this.#held.delete(handle);
  }

  get size(): number {
    return this.#held.size;
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#held.clear();
  }

  #tick(): void {
    const { api, leaseMs, nowMs, log } = this.options;
    const now = nowMs();
    for (const [handle, h] of this.#held) {
      if (h.renewing || h.renewAt > now) continue;
      if (now >= h.until) {
        this.#held.delete(handle);
        continue;
      }
      h.renewing = true;
      api.call((b) => b.nack(h.group, handle, leaseMs)).then(
        () => {
          h.renewing = false;
          h.renewAt = nowMs() + leaseMs / 2;
        },
        (err) => {
          // Acked elsewhere, expired or the broker is away: stop renewing this one.
          this.#held.delete(handle);
          log("debug", "auto_renew: renewal refused", { group: h.group, err: String(err) });
        },
      );
    }
    if (this.#held.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
