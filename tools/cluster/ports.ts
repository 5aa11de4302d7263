// Ports for processes that a test or a local cluster restarts at the same address (etcd,
// the KV host). A port from the kernel's ephemeral range can be taken while its owner is
// down: by any process that binds port 0 and by the source port of any outbound
// connection (seen in CI: etcd restarted into EADDRINUSE). Ports below that range are
// handed out by nobody, so a restart finds them free unless two pickers collide.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port this picker uses. */
const STABLE_PORT_MIN = 20_000;

/** The first ephemeral port (Linux's ip_local_port_range; 32768 where it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > STABLE_PORT_MIN + 1000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether 127.0.0.1:port can be listened on right now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A free 127.0.0.1 port below the ephemeral range, for a process that will be restarted. */
export async function stablePort(): Promise<number> {
  const high = ephemeralLow();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = STABLE_PORT_MIN + Math.floor(Math.random() * (high - STABLE_PORT_MIN));
    if (await portIsFree(port)) return port;
  }
  throw new Error(`no free port in ${STABLE_PORT_MIN}..${high - 1} after 200 tries`);
}
