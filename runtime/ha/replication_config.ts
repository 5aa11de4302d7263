// Every limit of the replication data plane: RocketMQ's name where it has one
// (reference/rocketmq.md §15), unit, default and reason.
import { HA_FRAME_BYTES_MAX } from "./frames.ts";

export interface ReplicationConfig {
  /** Most CommitLog bytes per TRANSFER frame (haTransferBatchSize). 32 KiB. A record larger
   * than this goes alone in its frame; a chunk never crosses a segment or epoch end. */
  haTransferBatchSize: number;
  /** ms of silence after which the master sends a HEARTBEAT and the slave an ACK
   * (haSendHeartbeatInterval). 5000. */
  haSendHeartbeatInterval: number;
  /** ms without any frame from the peer after which either side closes the link
   * (haHousekeepingInterval). 20,000. */
  haHousekeepingInterval: number;
  /** A slave more than this many bytes behind the master's end is out of sync
   * (haMaxGapNotInSync). 256 MiB. */
  haMaxGapNotInSync: number;
  /** A slave that has not caught up with the master's end (as of some send) for this many ms
   * leaves the in-sync set (haMaxTimeSlaveNotCatchup). 15,000. */
  haMaxTimeSlaveNotCatchup: number;
  /** Bytes sent to one slave and not yet acknowledged. The slave reads its socket eagerly
   * and applies in order, so this bounds its queue (memory) as well. Ours; 4 MiB. */
  haMaxInFlightBytes: number;
  /** Largest frame either side accepts (RocketMQ's remoting frame limit). 16 MiB. Must
   * exceed the largest record, maxMessageSize + 64 KiB, plus the transfer header. */
  haFrameBytesMax: number;
  /** Slave connections a master holds at once; more are closed at accept. 16. */
  haSlavesMax: number;
  /** ms a slave waits for the TCP connection and then for the handshake reply. 3000. */
  haConnectTimeoutMs: number;
  /** Slave reconnect delay: doubles from Min to Max after each failed session; RocketMQ's
   * HAClient retries every 5 s. 200 / 5000 ms. */
  haReconnectDelayMsMin: number;
  haReconnectDelayMsMax: number;
  /** ms a SYNC producer waits for its replicas (slaveTimeout): the broker passes it to
   * waitForReplicas() and answers FLUSH_SLAVE_TIMEOUT after it. 3000. */
  slaveTimeout: number;
}

export const MIB = 1024 * 1024;

export function defaultReplicationConfig(): ReplicationConfig {
  return {
    haTransferBatchSize: 32 * 1024,
    haSendHeartbeatInterval: 5000,
    haHousekeepingInterval: 20_000,
    haMaxGapNotInSync: 256 * MIB,
    haMaxTimeSlaveNotCatchup: 15_000,
    haMaxInFlightBytes: 4 * MIB,
    haFrameBytesMax: HA_FRAME_BYTES_MAX,
    haSlavesMax: 16,
    haConnectTimeoutMs: 3000,
    haReconnectDelayMsMin: 200,
    haReconnectDelayMsMax: 5000,
    slaveTimeout: 3000,
  };
}

/** Settings with overrides, checked against the store's largest record. */
export function replicationConfig(
  patch: Partial<ReplicationConfig> | undefined,
  recordBytesMax: number,
): ReplicationConfig {
  const config = { ...defaultReplicationConfig(), ...patch };
  for (const [name, value] of Object.entries(config)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`Bad replication setting ${name}: ${value} (a positive integer)`);
    }
  }
  if (config.haFrameBytesMax < recordBytesMax + 64) {
    throw new RangeError(
      `Bad replication setting haFrameBytesMax: ${config.haFrameBytesMax} cannot hold a record of maxMessageSize + 64 KiB (${recordBytesMax} bytes)`,
    );
  }
  if (config.haMaxInFlightBytes < config.haTransferBatchSize) {
    throw new RangeError("Bad replication setting haMaxInFlightBytes: below haTransferBatchSize");
  }
  return config;
}
