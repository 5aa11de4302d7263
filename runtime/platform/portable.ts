// The parts of a Platform that are the same code on Deno and Bun: both implement node:net
// and the web clock and timers alike. Kept here so deno.ts and bun.ts say only what differs.
import * as net from "node:net";
import type { Clock, HttpServer, ServeOptions, TcpListenOptions, TcpServer } from "./platform.ts";
import { listenConnectionGuard } from "./conn_guard.ts";

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
  onSocket: (socket: net.Socket) => void,
): Promise<TcpServer> {
  return new Promise((resolve, reject) => {
    const server = net.createServer(onSocket);
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const { port } = server.address() as net.AddressInfo;
      resolve({
        port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/**
 * Serves through the connection guard when `options.connections` is set: `listen` starts
 * the runtime's own server on the address it is given (loopback, a free port, behind the
 * guard), and closing stops the guard first, then the server.
 */
export async function guardedServe(
  options: ServeOptions,
  listen: (hostname: string, port: number) => Promise<HttpServer>,
): Promise<HttpServer> {
  if (!options.connections) return listen(options.hostname, options.port);
  const inner = await listen("127.0.0.1", 0);
  let front;
  try {
    front = await listenConnectionGuard({
      ...options.connections,
      hostname: options.hostname,
      port: options.port,
      upstreamPort: inner.port,
    });
  } catch (err) {
    await inner.close({ force: true });
    throw err;
  }
  const guard = front;
  return {
    port: guard.port,
    async close(o?: { force?: boolean }) {
      const stopped = guard.close();
      if (o?.force) guard.destroyAll();
      // The server ends each upstream connection once its request is answered, and the
      // guard ends the client's after the last byte; the sweep closes any client that
      // lingers after that within idleTimeoutMs.
      await inner.close(o);
      await stopped;
    },
  };
}
