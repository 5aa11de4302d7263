// The parts of a Platform that are the same code on Deno and Bun: both implement node:net
// and the web clock and timers alike. Kept here so deno.ts and bun.ts say only what differs.
import type * as NodeNet from "node:net";
import { nodeNet } from "../protocol/node_builtins.ts";
import type {
  Clock,
  HttpServer,
  ServeOptions,
  TcpListenOptions,
  TcpServer,
  TlsPem,
} from "./platform.ts";
import { ConnectionTracker } from "./conn_guard.ts";
import { listenNodeFront } from "./conn_guard_node.ts";

export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  setTimer(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

export function listenNodeTcp(
  options: TcpListenOptions,
  onSocket: (socket: NodeNet.Socket) => void,
): Promise<TcpServer> {
  return new Promise((resolve, reject) => {
    const server = nodeNet().createServer(onSocket);
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const { port } = server.address() as NodeNet.AddressInfo;
      resolve({
        port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/** Where the runtime's own server listens. */
export type ListenAddress = { hostname: string; port: number };

/**
 * Serves through the connection guard when `options.connections` is set: `listen` starts
 * the runtime's own server on a free loopback port behind the guard, and closing stops the
 * guard first, then the server. Loopback TCP, not a Unix socket: a burst of connections
 * past a Unix socket's listen backlog fails at once (EAGAIN; 444 of 2,000 on Bun), where
 * TCP queues them; the two cost the produce path the same within noise (bench/README.md).
 */
export async function guardedServe(
  options: ServeOptions,
  listen: (address: ListenAddress, tls?: TlsPem) => Promise<HttpServer>,
): Promise<HttpServer> {
  if (!options.connections) {
    return listen({ hostname: options.hostname, port: options.port }, options.tls);
  }
  // The guard reads request heads, so TLS ends at its front; the loopback hop is plain.
  const inner = await listen({ hostname: "127.0.0.1", port: 0 });
  const tracker = new ConnectionTracker(options.connections);
  let listening;
  try {
    listening = await listenNodeFront({
      hostname: options.hostname,
      port: options.port,
      upstreamPort: inner.port,
      tracker,
      tls: options.tls &&
        { ...options.tls, handshakeTimeoutMs: options.connections.headerTimeoutMs },
    });
  } catch (err) {
    tracker.stop();
    await inner.close({ force: true });
    throw err;
  }
  const front = listening;
  return {
    port: front.port,
    async close(o?: { force?: boolean }) {
      const stopped = front.close();
      if (o?.force) tracker.destroyAll();
      // The server ends each upstream connection once its request is answered, and the
      // guard ends the client's after the last byte; the sweep closes any client that
      // lingers after that within idleTimeoutMs.
      await inner.close(o);
      await stopped;
      await tracker.whenEmpty();
      tracker.stop();
    },
  };
}
