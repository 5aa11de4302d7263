// The address a replica publishes (lease record, replica states): its HTTP and replication
// endpoints in one string, written by formatNodeAddress and read back by parseNodeAddress.
import type { MasterAddress } from "./replication_slave.ts";

/** "host:port|haHost:haPort[|remotingHost:port]": the HTTP, replication and (when it serves
 * one) RocketMQ remoting addresses of one replica, as the lease record and the published
 * replica states carry them. Readers before the third part ignore it. */
export function formatNodeAddress(
  http: string,
  ha: { host: string; port: number },
  remoting?: string,
): string {
  return `${http}|${ha.host}:${ha.port}${remoting ? `|${remoting}` : ""}`;
}

export function parseNodeAddress(
  address: string,
): { http: string; ha: MasterAddress; remoting?: string } | undefined {
  const [http, ha, remoting] = address.split("|");
  const at = ha?.lastIndexOf(":") ?? -1;
  const port = Number(ha?.slice(at + 1));
  if (!http || at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  return { http, ha: { host: ha.slice(0, at), port }, ...(remoting && { remoting }) };
}
