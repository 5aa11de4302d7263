// What GET /v1/ha/status reports of an HaNode: its role, epoch and log end, the
// master it knows of, and its replication from the slave's or the master's side.
import type { BrokerConfig } from "../config.ts";
import type { LeaseRecord } from "./lease_store.ts";
import { parseNodeAddress } from "./node_address.ts";
import type { HaRole, HaStatus, MasterParts, SlaveParts } from "./node_types.ts";

/** The node's state that its status is made of. */
export interface StatusView {
  role: HaRole;
  config: BrokerConfig;
  /** The lease record as last seen. */
  record: LeaseRecord | null;
  recordLive(record: LeaseRecord): boolean;
  slave: SlaveParts | undefined;
  master: MasterParts | undefined;
  /** The epoch file's last epoch. */
  lastEpoch: number;
  /** What the node last published as its in-sync flag. */
  inSync: boolean;
}

export function haStatus(v: StatusView): HaStatus {
  const record = v.record;
  const master = record && v.recordLive(record)
    ? {
      brokerId: record.owner,
      httpAddress: parseNodeAddress(record.address)?.http ?? "",
      epoch: record.epoch,
    }
    : null;
  const s = v.slave;
  const m = v.master;
  return {
    role: v.role,
    brokerId: v.config.brokerId,
    brokerGroup: v.config.brokerName,
    epoch: m?.epoch ?? v.lastEpoch,
    maxOffset: (m?.broker.store ?? s?.store)?.maxPhysicalOffset ?? 0,
    master,
    ...(s?.slave
      ? {
        slave: {
          state: s.slave.state,
          heldOffset: s.slave.heldOffset,
          masterMaxOffset: s.slave.masterMaxOffset,
          inSync: v.inSync,
        },
      }
      : {}),
    ...(m
      ? {
        replicas: m.master.replicas().map((r) => ({
          brokerId: r.brokerId,
          ackedOffset: r.ackedOffset,
          inSync: r.inSync,
        })),
      }
      : {}),
  };
}
