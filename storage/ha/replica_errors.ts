// Typed errors of the replica side of the store: appending bytes streamed from a master,
// truncating a divergent tail, and the epoch file. StoreErrorCode (storage/errors.ts) keeps
// the codes the broker maps to HTTP problems; these are the replication layer's own, as the
// timer store has its own (storage/timer/timer_config.ts).

export type ReplicaErrorCode =
  /** appendReplicated() at an offset other than the local end of the CommitLog. */
  | "REPLICA_OFFSET_MISMATCH"
  /** Streamed bytes that are not whole, CRC-valid records at their own offsets. */
  | "REPLICA_RECORD_CORRUPT"
  /** An offset outside the CommitLog, or not a record boundary. */
  | "REPLICA_OFFSET_ILLEGAL"
  /** The epoch file does not parse or its CRC does not match. */
  | "EPOCH_FILE_CORRUPT"
  /** An epoch entry that does not follow the last one (lower epoch or start offset). */
  | "EPOCH_ILLEGAL"
  /** The truncation marker does not hold an offset: the intended cut is unknown. */
  | "TRUNCATE_MARKER_CORRUPT";

export class ReplicaError extends Error {
  constructor(
    readonly code: ReplicaErrorCode,
    message: string,
    /** For REPLICA_RECORD_CORRUPT: the offset of the first refused byte. */
    readonly offset?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "ReplicaError";
  }
}
