// What a slave refuses, as pure checks: a TRANSFER that does not continue its log and epoch
// file, and the errors it closes a link with (fenced, failed apply). ReplicationSlave
// (replication_slave.ts) applies what passes.
import type { EpochEntry } from "../../storage/ha/epoch_file.ts";
import type { TransferFrame } from "./frames.ts";
import { ReplicationError } from "./replication_errors.ts";

/**
 * Checks TRANSFER `t` from master `address` against this slave's log end (`expectOffset`)
 * and its epoch file's last entry; throws PROTOCOL_VIOLATION when it does not follow. True
 * when `t` starts a newer epoch, which the caller appends to the epoch file first.
 */
export function checkTransfer(
  t: TransferFrame,
  expectOffset: number,
  last: EpochEntry | undefined,
  address: string,
): boolean {
  const violation = (why: string) =>
    new ReplicationError("PROTOCOL_VIOLATION", `Master ${address} ${why}`);
  if (t.offset !== expectOffset) {
    throw violation(`sent bytes at ${t.offset}; this slave's log ends at ${expectOffset}`);
  }
  if (t.dataEpoch > t.epoch) {
    throw violation(`sent data of epoch ${t.dataEpoch} > its own ${t.epoch}`);
  }
  if (!last || t.dataEpoch > last.epoch) {
    // The first bytes of a newer epoch (or, for an empty slave, the epoch it starts in).
    if (last ? t.dataEpochStart !== t.offset : t.dataEpochStart > t.offset) {
      throw violation(`starts epoch ${t.dataEpoch} at ${t.dataEpochStart}, not at ${t.offset}`);
    }
    return true;
  } else if (t.dataEpoch < last.epoch || t.dataEpochStart !== last.startOffset) {
    throw violation(
      `sent data of epoch ${t.dataEpoch} from ${t.dataEpochStart}; the local epoch file ends with epoch ${last.epoch} from ${last.startOffset}`,
    );
  }
  return false;
}

/** Why applying what master `address` sent failed, as a ReplicationError. */
export function applyError(err: unknown, address: string): ReplicationError {
  if (err instanceof ReplicationError) return err;
  return new ReplicationError(
    "REPLICA_APPLY_FAILED",
    `Cannot apply what master ${address} sent: ${(err as Error).message}`,
    { cause: err },
  );
}

/** A peer of `epoch` refused by a slave that has seen `highestEpoch`. */
export function fencedError(epoch: number, peer: string, highestEpoch: number): ReplicationError {
  return new ReplicationError(
    "EPOCH_FENCED",
    `Refusing ${peer} of epoch ${epoch}: this slave has seen epoch ${highestEpoch}`,
  );
}
