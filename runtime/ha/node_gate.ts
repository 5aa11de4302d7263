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
    // confirm runs after the put appended the record: every refusal from here on is
    // info-class (504 REPLICATION_TIMEOUT, "written, not confirmed"), never a 503 that
    // says nothing was written, which the SDK and the cluster router send again
    // (a duplicate no producer asked for, reliability.md P4). RocketMQ likewise answers
    // FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE as send statuses after the store, which
    // its producer does not retry (retryAnotherBrokerWhenNotStoreOK false).
    confirm: async (endOffset) => {
      const m = parts();
      if (m === undefined) throw unconfirmed("LEADERSHIP_LOST", endOffset, config, node);
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
      if (!node.writable(m)) throw unconfirmed("LEADERSHIP_LOST", endOffset, config, node);
      return replicas;
    },
  };
}

/** Why a write appended on the master was not acknowledged. */
export type UnconfirmedCause = "FLUSH_SLAVE_TIMEOUT" | "SLAVE_NOT_AVAILABLE" | "LEADERSHIP_LOST";

function replicationFailure(
  err: unknown,
  endOffset: number,
  config: BrokerConfig,
  node: GateNode,
): BrokerError {
  if (!(err instanceof ReplicationError)) return err as BrokerError;
  switch (err.code) {
    case "FLUSH_SLAVE_TIMEOUT":
    case "SLAVE_NOT_AVAILABLE":
      return unconfirmed(err.code, endOffset, config, node);
    default: // MASTER_DEPOSED, REPLICATION_STOPPED: this master can confirm nothing more
      return unconfirmed("LEADERSHIP_LOST", endOffset, config, node);
  }
}

/** The 504 for a write that is on the master's log but not acknowledged: it may or may not
 * survive (a later master may hold it), so only a retry with an Idempotency-Key is safe.
 * `leader` names the master when another broker is known to hold the lease. */
export function unconfirmed(
  cause: UnconfirmedCause,
  endOffset: number,
  config: BrokerConfig,
  node: GateNode,
): BrokerError {
  const { inSyncReplicas, haSlaveTimeoutMs } = config;
  const notLeader = cause === "LEADERSHIP_LOST"
    ? node.notLeader("Cannot acknowledge the write")
    : undefined;
  const why = cause === "FLUSH_SLAVE_TIMEOUT"
    ? `not held by ${inSyncReplicas} replicas within ${haSlaveTimeoutMs} ms (haSlaveTimeoutMs)`
    : cause === "SLAVE_NOT_AVAILABLE"
    ? `fewer than ${inSyncReplicas - 1} slaves are in sync now (inSyncReplicas ${inSyncReplicas})`
    : `the lease ended before it was confirmed (${notLeader!.message})`;
  return new BrokerError(
    "REPLICATION_TIMEOUT",
    `Written on the master but not acknowledged: ${why}; it may still be delivered: retry with an Idempotency-Key`,
    { ...notLeader?.extensions, cause, endOffset, inSyncReplicas },
  );
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
