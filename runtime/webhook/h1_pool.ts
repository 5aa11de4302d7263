// The webhook client's connections to one origin at one vetted address: dials them
// (pinned, under the connect deadline), hands them to attempts, queues the rest.
import type net from "node:net";
import { nodeNet, nodeTls } from "../protocol/node_builtins.ts";
import { classify, pinnedLookup, type PreparedTarget } from "./http_delivery.ts";
import type { Attempt } from "./h1_attempt.ts";
import { Connection } from "./h1_connection.ts";
import type { Settings } from "./h1_settings.ts";
import type { VettedAddress } from "./ssrf.ts";

/** The connections to one origin at one vetted address, and the attempts waiting for one. */
export class Pool {
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  #waiting: Attempt[] = [];
  #retired = false;

  /** `target` is the first URL of this origin and address; others share its connections. */
  constructor(
    readonly settings: Settings,
    readonly target: PreparedTarget,
    readonly address: VettedAddress,
  ) {}

  /** Starts `attempt` on an idle connection, a new one, or queues it. */
  run(attempt: Attempt): void {
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle.start(attempt);
    if (this.#all.size < this.settings.connectionsPerAddressMax) {
      return void this.#dial(attempt);
    }
    this.#waiting.push(attempt);
  }

  /** A connection finished its response and may carry another (a queued one first, also
   * in a retired pool: requests it accepted are served). */
  release(connection: Connection): void {
    while (this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      if (!next.settled) return connection.start(next);
    }
    if (this.#retired) return void connection.destroy();
    connection.idleSince = performance.now();
    this.#idle.push(connection);
  }

  /** A connection is gone (closed, failed, or dropped mid-response). */
  forget(connection: Connection): void {
    this.#all.delete(connection);
    const i = this.#idle.indexOf(connection);
    if (i >= 0) this.#idle.splice(i, 1);
    // A queued attempt takes the freed slot (destroy() empties the queue first).
    while (this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      if (!next.settled) return void this.#dial(next);
    }
  }

  closeIdle(before: number): void {
    while (this.#idle.length > 0 && this.#idle[0].idleSince < before) {
      this.#idle.shift()!.destroy();
    }
  }

  /** No new work: idle connections close now, busy ones once the queue is served. */
  retire(): void {
    this.#retired = true;
    for (const c of [...this.#idle]) c.destroy();
  }

  /** `attempt` again, on a new connection (its reused one was stale), ahead of the queue. */
  redial(attempt: Attempt): void {
    if (attempt.settled) return;
    if (this.#all.size < this.settings.connectionsPerAddressMax) this.#dial(attempt);
    else this.#waiting.unshift(attempt);
  }

  /** Retired and with nothing left: the client may forget it. */
  get finished(): boolean {
    return this.#retired && this.#all.size === 0 && this.#waiting.length === 0;
  }

  /** Closes every connection; resolves when their sockets have closed. */
  destroy(): Promise<void> {
    this.#retired = true;
    this.#waiting = [];
    const closed = [...this.#all].map((c) => c.destroy());
    return Promise.all(closed).then(() => {});
  }

  /** TCP (and TLS) to the vetted address under the connect deadline, for `attempt`. */
  #dial(attempt: Attempt): void {
    const { target, address, settings } = this;
    const common = {
      host: address.address,
      family: address.family,
      port: target.port,
      lookup: pinnedLookup(address),
    };
    let socket: net.Socket;
    try {
      socket = target.isHttps
        ? nodeTls().connect({
          ...common,
          servername: target.servername,
          ALPNProtocols: ["http/1.1"],
          ...(settings.caCerts ? { ca: settings.caCerts } : {}),
        })
        : nodeNet().connect(common);
    } catch (error) {
      // Bun throws here for a bad CA bundle; Deno reports it as a socket error.
      const e = error as Error & { code?: string };
      return attempt.fail(classify(e, false), e.message, e);
    }
    socket.setNoDelay(true);
    const connection = new Connection(this, socket, attempt);
    this.#all.add(connection);
    const ms = settings.connectTimeoutMs;
    const timer = setTimeout(() => {
      attempt.fail("connect-timeout", `Not connected within ${ms} ms`);
      connection.destroy();
    }, ms);
    socket.once("close", () => clearTimeout(timer));
    socket.once(target.isHttps ? "secureConnect" : "connect", () => {
      clearTimeout(timer);
      connection.connected();
      // The attempt may have given up meanwhile: the connection serves the next one.
      if (attempt.settled) this.release(connection);
      else connection.start(attempt);
    });
  }
}
