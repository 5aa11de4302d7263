// The address a replica publishes (lease record, replica states): its HTTP and replication
// endpoints in one string, written by formatNodeAddress and read back by parseNodeAddress.
import type { MasterAddress } from "./replication_slave.ts";

/** "host:port|haHost:haPort": the HTTP and replication addresses of one replica, as the
 * lease record and the published replica states carry them. */
export function formatNodeAddress(http: string, ha: { host: string; port: number }): string {
  return `${http}|${ha.host}:${ha.port}`;
}

export function parseNodeAddress(
  address: string,
): { http: string; ha: MasterAddress } | undefined {
  const [http, ha] = address.split("|");
  const at = ha?.lastIndexOf(":") ?? -1;
  const port = Number(ha?.slice(at + 1));
  if (!http || at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  return { http, ha: { host: ha.slice(0, at), port } };
}
