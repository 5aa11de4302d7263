// Ports a broker picks early and binds later: held by a placeholder listener in between, so
// no other process can take them (a port picked, released and bound seconds later was lost
// to another process in CI: a restarted broker's remoting port, a slave's replication port).
import type { Logger } from "./log.ts";
import type { Platform } from "./platform/platform.ts";

/** A free port, held by a listener until release(): a port picked early and bound much later
 * (the store opens in between) would otherwise be free for any other process to take. */
export async function reservePort(
  platform: Platform,
  host: string,
  port = 0,
): Promise<{ port: number; release(): Promise<void> }> {
  const server = await platform.listenTcpConnections({ hostname: host, port }, (s) => s.destroy());
  return { port: server.port, release: () => server.close() };
}

/** A free port for the replication listener, named in the lease before it is bound and bound
 * only while this replica is master: held by a placeholder whenever it is not, so that no
 * other process takes it in between (a promotion would then fail to listen). */
export async function replicationPortHold(platform: Platform, host: string, log: Logger) {
  const first = await reservePort(platform, host);
  const port = first.port;
  let held: { release(): Promise<void> } | undefined = first;
  return {
    port,
    async release() {
      const h = held;
      held = undefined;
      await h?.release();
    },
    async hold() {
      if (held) return;
      held = await reservePort(platform, host, port).catch((err) => {
        log("warn", "cannot hold the replication port while not master", {
          port,
          err: String(err),
        });
        return undefined;
      });
    },
  };
}
