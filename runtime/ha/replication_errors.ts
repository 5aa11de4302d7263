// Typed errors of the replication runtime. The broker maps the first two to RocketMQ's
// answers to a SYNC producer: FLUSH_SLAVE_TIMEOUT (12) and SLAVE_NOT_AVAILABLE (11); a put
// that got either was written on the master and may still reach the slaves (info, not fail).

export type ReplicationErrorCode =
  /** waitForReplicas(): not enough replicas held the offset within the time given. */
  | "FLUSH_SLAVE_TIMEOUT"
  /** waitForReplicas(): fewer in-sync slaves than needed when the wait began. */
  | "SLAVE_NOT_AVAILABLE"
  /** The master saw a higher epoch from a peer: another master was elected. */
  | "MASTER_DEPOSED"
  /** The master or slave was stopped. */
  | "REPLICATION_STOPPED"
  /** A peer's epoch is below the highest this side has seen (a deposed master). */
  | "EPOCH_FENCED"
  /** The slave shares no history with the master (DIVERGED) or lacks what the master still
   * keeps (BEHIND), and resyncWhenDiverged is off. */
  | "REPLICA_DIVERGED"
  /** The slave's store refused what the master sent or could not truncate (cause: the
   * ReplicaError or StoreError). */
  | "REPLICA_APPLY_FAILED"
  /** A frame that is malformed or out of place, an offset that does not follow. */
  | "PROTOCOL_VIOLATION"
  /** No frame from the peer for haHousekeepingInterval. */
  | "PEER_SILENT"
  /** The TCP connection failed, or the handshake did not complete in time. */
  | "LINK_FAILED";

export class ReplicationError extends Error {
  constructor(readonly code: ReplicationErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ReplicationError";
  }
}
