// The parts of a Platform that are the same code on Deno and Bun: both implement node:net
// and the web clock and timers alike. Kept here so deno.ts and bun.ts say only what differs.
import * as net from "node:net";
import type { Clock, TcpListenOptions, TcpServer } from "./platform.ts";

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
