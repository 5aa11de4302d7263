// A replica's replication figures as Prometheus families: role, epoch, log end, and the
// lag of each replica (on the master) or of this slave behind its master.
import type { HaRole, HaStatus } from "../protocol/ha_api.ts";
import { family, type Sample } from "../protocol/prom_text.ts";

const ROLES: HaRole[] = ["starting", "slave", "master", "changing", "stopped"];

export function haMetrics(s: HaStatus): string {
  const lag: Sample[] = (s.replicas ?? []).map((r) => [
    { replica: r.brokerId },
    Math.max(0, s.maxOffset - r.ackedOffset),
  ]);
  if (s.slave) {
    lag.push([{ replica: s.brokerId }, Math.max(0, s.slave.masterMaxOffset - s.slave.heldOffset)]);
  }
  const lines = [
    ...family(
      "mq_ha_role",
      "gauge",
      "1 for this replica's current role",
      ROLES.map((role) => [{ role }, s.role === role ? 1 : 0]),
    ),
    ...family("mq_ha_epoch", "gauge", "Epoch of this replica's lease or newest record", s.epoch),
    ...family("mq_ha_max_offset", "gauge", "End of this replica's CommitLog (bytes)", s.maxOffset),
    ...family("mq_ha_replica_lag_bytes", "gauge", "Bytes a replica is behind its master", lag),
    ...family(
      "mq_ha_in_sync_replicas",
      "gauge",
      "Replicas the master counts in sync",
      (s.replicas ?? []).filter((r) => r.inSync).length,
    ),
  ];
  return lines.join("\n") + "\n";
}
