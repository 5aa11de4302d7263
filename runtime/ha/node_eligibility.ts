// What an HaNode says for itself in an election, published every lease poll (lease.ts:
// eligibility()), and the state that rests on: in sync or not, the log's end, a lapsed
// master's confirm offset. The node's role changes set these; report() reads them.
import type { BrokerConfig } from "../config.ts";
import type { LeaseRecord, LeaseStore } from "./lease_store.ts";
import type { ReplicaEligibility } from "./lease_types.ts";
import type { HaRole, MasterParts, SlaveParts } from "./node_types.ts";

/** The node as report() sees it (the slave already pointed at the lease's master). */
export interface EligibilityView {
  role: HaRole;
  config: BrokerConfig;
  /** The lease record as last seen. */
  record: LeaseRecord | null;
  recordLive(record: LeaseRecord): boolean;
  slave: SlaveParts | undefined;
  master: MasterParts | undefined;
  /** The epoch file's last epoch, read when used. */
  lastEpoch(): number;
  leases: Pick<LeaseStore, "readReplicas">;
}

export class NodeEligibility {
  /** In the master's in-sync set at the last contact (what an election may trust). */
  inSync = false;
  /** The log's end as last known (also while a role change has the store closed). */
  maxOffset = 0;
  /**
   * Set when this master's lease lapsed with nobody else taking it (KV down or slow):
   * the confirm offset it had. Until another broker's record shows up or this replica
   * follows a master, it publishes itself in sync at that offset. RocketMQ keeps a
   * valid old master eligible: it holds every write it acknowledged. And its peers then
   * measure themselves against what it acknowledged, never against bytes it wrote and
   * did not acknowledge (else none of them would count as in sync, and nobody could be
   * elected once the KV returned).
   */
  lapsedConfirmOffset: number | undefined;

  /**
   * What this replica says for itself in an election, published every poll. A master
   * publishes its confirm offset (the least offset every in-sync replica holds): once it is
   * gone, that is the bar. A slave is in sync while it streams within haMaxGapNotInSync of
   * the master; once the master's lease has lapsed, only if it holds at least the confirm
   * offset the master last published. So a replica that fell behind (or was down) while
   * the master went on is never elected, even after everything restarted. A master whose
   * lease lapsed goes on publishing its confirm offset, in sync (see lapsedConfirmOffset).
   */
  async report(v: EligibilityView): Promise<ReplicaEligibility> {
    const s = v.slave;
    const record = v.record;
    const m = v.master;
    if (s !== undefined && v.role === "slave") {
      const slave = s.slave;
      if (slave?.state === "TRANSFER") {
        this.lapsedConfirmOffset = undefined;
        this.inSync = slave.masterMaxOffset - slave.heldOffset <=
          v.config.haMaxGapNotInSync;
      }
    }
    if (record !== null && record.owner !== v.config.brokerId) {
      this.lapsedConfirmOffset = undefined;
    }
    const store = m?.broker.store ?? s?.store;
    if (store !== undefined) this.maxOffset = store.maxPhysicalOffset;
    if (v.role === "master" && m !== undefined) {
      return { epoch: v.lastEpoch(), maxOffset: m.master.confirmOffset, inSync: true };
    }
    if (this.lapsedConfirmOffset !== undefined) {
      return { epoch: v.lastEpoch(), maxOffset: this.lapsedConfirmOffset, inSync: true };
    }
    if (
      record !== null && record.owner !== v.config.brokerId && !v.recordLive(record)
    ) {
      const states = await v.leases.readReplicas(v.config.brokerName);
      const last = states.find((x) => x.brokerId === record.owner);
      if (last !== undefined) this.inSync = this.maxOffset >= last.maxOffset;
    }
    return {
      epoch: v.lastEpoch(),
      maxOffset: this.maxOffset,
      inSync: this.inSync,
    };
  }
}
