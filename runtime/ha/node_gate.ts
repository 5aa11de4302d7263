// The replication gate HaNode hands its Broker: every client write is checked before it is
// appended and again before it is acknowledged (node.ts, top), and a replication failure
// becomes the BrokerError the client sees.
import type { BrokerConfig } from "../config.ts";
import type { ReplicationGate } from "../broker.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { LeaseRecord } from "./lease_store.ts";
import { parseNodeAddress } from "./node_address.ts";
import type { MasterParts } from "./node_types.ts";
import { ReplicationError } from "./replication_errors.ts";

/** What the gate asks of its node: whether these parts may take writes now, and the
 * NOT_LEADER error that names the master. */
export interface GateNode {
  writable(m: MasterParts): boolean;
  notLeader(what: string): BrokerError;
}

/** The gate of one mastership: `parts` are the master's once started (undefined before). */
export function replicationGate(
  config: BrokerConfig,
  parts: () => MasterParts | undefined,
  node: GateNode,
): ReplicationGate {
  return {
    checkWritable: () => {
      const m = parts();
      if (m === undefined || !node.writable(m)) {
        throw node.notLeader("Cannot accept writes");
      }
      // Refuse up front, writing nothing, when SYNC could not be met anyway.
      const slavesNeeded = config.inSyncReplicas - 1;
      if (config.replicationMode === "SYNC" && slavesNeeded > 0) {
        const inSync = m.master.inSyncSlaveCount();
        if (inSync < slavesNeeded) {
          throw new BrokerError(
            "REPLICAS_NOT_AVAILABLE",
            `Cannot accept writes: ${inSync} slaves are in sync, inSyncReplicas ${config.inSyncReplicas} needs ${slavesNeeded}; nothing was written, retry later`,
            { inSyncReplicas: config.inSyncReplicas, inSyncSlaves: inSync },
          );
        }
      }
    },
    confirm: async (endOffset) => {
      const m = parts();
      if (m === undefined) throw node.notLeader("Cannot confirm the write");
      let replicas = 1;
      if (config.replicationMode === "SYNC" && config.inSyncReplicas > 1) {
        try {
          await m.master.waitForReplicas(
            endOffset,
            config.inSyncReplicas,
            config.haSlaveTimeoutMs,
          );
        } catch (err) {
          throw replicationFailure(err, endOffset, config, node);
        }
        replicas = config.inSyncReplicas;
      }
      // Leadership may have ended while the put or the wait was in flight.
      if (!node.writable(m)) {
        throw node.notLeader(
          "Cannot acknowledge the write (it may or may not survive; retry with the same Idempotency-Key)",
        );
      }
      return replicas;
    },
  };
}

function replicationFailure(
  err: unknown,
  endOffset: number,
  config: BrokerConfig,
  node: GateNode,
): BrokerError {
  if (!(err instanceof ReplicationError)) return err as BrokerError;
  const { inSyncReplicas, haSlaveTimeoutMs } = config;
  switch (err.code) {
    case "FLUSH_SLAVE_TIMEOUT":
      return new BrokerError(
        "REPLICATION_TIMEOUT",
        `Written on the master but not held by ${inSyncReplicas} replicas within ${haSlaveTimeoutMs} ms (haSlaveTimeoutMs); it may still be delivered: retry with an Idempotency-Key`,
        { endOffset, inSyncReplicas },
      );
    case "SLAVE_NOT_AVAILABLE":
      return new BrokerError(
        "REPLICAS_NOT_AVAILABLE",
        `Fewer than ${
          inSyncReplicas - 1
        } slaves are in sync (inSyncReplicas ${inSyncReplicas}); written on the master only, so not acknowledged: retry later`,
        { endOffset, inSyncReplicas },
      );
    default:
      return node.notLeader(`Cannot confirm replication (${err.code})`);
  }
}

/** NOT_LEADER for `what`, naming the master when `record` is another broker's live record. */
export function notLeaderError(
  what: string,
  config: BrokerConfig,
  record: LeaseRecord | null,
  recordLive: (record: LeaseRecord) => boolean,
): BrokerError {
  const live = record !== null && recordLive(record) &&
    record.owner !== config.brokerId;
  const leader = live ? parseNodeAddress(record.address)?.http : undefined;
  return new BrokerError(
    "NOT_LEADER",
    `${what}: broker ${config.brokerId} of ${config.brokerName} is not the master${
      leader ? `; the master is at ${leader}` : "; no master is known yet"
    }`,
    leader ? { leader, epoch: record!.epoch } : {},
  );
}
