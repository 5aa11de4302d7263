// A lean connection's idle clock (gRPC's max_connection_idle): `onIdle` runs once the
// connection has had no stream for `ms` — from its start too, so a socket that never sends
// the preface is closed as well.
export class IdleClock {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #since = Date.now();
  #stopped = false;

  constructor(
    private readonly ms: number,
    private readonly busy: () => boolean,
    private readonly onIdle: () => void,
  ) {
    if (ms > 0) this.#arm(ms);
  }

  /** The last stream went: idle from now. */
  quiet() {
    this.#since = Date.now();
  }

  stop() {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #arm(ms: number) {
    this.#timer = setTimeout(() => {
      if (this.#stopped) return;
      const left = this.#since + this.ms - Date.now();
      if (this.busy()) return this.#arm(this.ms);
      if (left > 0) return this.#arm(left);
      this.onIdle();
    }, ms);
    (this.#timer as { unref?: () => void }).unref?.();
  }
}
