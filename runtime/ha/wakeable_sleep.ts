// A sleep that another call can cut short: the replication slave's reconnect delay, ended
// early by setMaster() (a new master to try at once) or stop().
export class WakeableSleep {
  #sleeping: { timer: ReturnType<typeof setTimeout>; resolve: () => void } | undefined;

  /** Resolves after `ms`, or at wake(), whichever comes first. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#sleeping = undefined;
        resolve();
      }, ms);
      this.#sleeping = { timer, resolve };
    });
  }

  /** Ends the sleep in progress now, if any. */
  wake(): void {
    const s = this.#sleeping;
    this.#sleeping = undefined;
    if (s) {
      clearTimeout(s.timer);
      s.resolve();
    }
  }
}
