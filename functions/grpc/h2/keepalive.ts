// A lean connection's keepalive (gRPC's keepalive_time / keepalive_timeout, server side):
// when nothing came from the client for `everyMs`, it is sent a PING; when nothing comes
// back within `timeoutMs` the peer is gone (a host that vanished without a FIN), and the
// connection ends — its Telemetry session and held calls with it.
export class Keepalive {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #heard = Date.now();
  #pingedAt = 0;
  #stopped = false;

  constructor(
    private readonly everyMs: number,
    private readonly timeoutMs: number,
    private readonly ping: () => void,
    private readonly dead: () => void,
  ) {
    if (everyMs > 0) this.#arm(everyMs);
  }

  /** Bytes came from the client. */
  heard() {
    this.#heard = Date.now();
  }

  stop() {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #arm(ms: number) {
    this.#timer = setTimeout(() => this.#check(), Math.max(ms, 1));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #check() {
    if (this.#stopped) return;
    const now = Date.now();
    if (this.#pingedAt > 0) {
      if (this.#heard < this.#pingedAt) return this.dead();
      this.#pingedAt = 0;
    }
    const quiet = now - this.#heard;
    if (quiet < this.everyMs) return this.#arm(this.everyMs - quiet);
    this.#pingedAt = now;
    this.ping();
    this.#arm(this.timeoutMs);
  }
}
