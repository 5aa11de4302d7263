// Cutting the CommitLog back for replication (a returning old master, a slave whose tail
// diverged): the records at and after an offset go, with the ConsumeQueue units and index
// entries that point there. Crash-safe: a durable marker (truncate_marker.ts) is written
// first and removed last; a crash in between is finished by recovery.
import type { StoreCore } from "../store_core.ts";
import { isRecordHead } from "../commit_log/replica_io.ts";
import { StoreError } from "../errors.ts";
import { ReplicaError } from "./replica_errors.ts";
import { removeTruncateMarker, writeTruncateMarker } from "./truncate_marker.ts";

/**
 * Drops the CommitLog at and after `offset` (a record boundary in [min, max]), with the
 * ConsumeQueue units and index entries that point there, for a returning old master or a
 * slave whose tail diverged. Puts and replicated appends are refused meanwhile (writes
 * gathered before are written and synced first, then cut). Crash-safe: a durable marker
 * is written first and removed last; a crash in between is finished by recovery, so the
 * dropped records are never served again. When it resolves the cut is durable: segments
 * removed (folder fsynced), the tail zeroed and fdatasynced, ConsumeQueues and index
 * synced, and a checkpoint at `offset` written. Queue offsets continue from what the
 * ConsumeQueues hold. Errors: REPLICA_OFFSET_ILLEGAL for a bad offset (nothing changed);
 * STORE_NOT_WRITABLE when the store is closed, failed or already truncating.
 */
export async function truncateCommitLogTo(core: StoreCore, offset: number): Promise<void> {
  const { gate, commitLog, groupCommit, checkpoints } = core;
  gate.check();
  gate.truncating = true;
  try {
    await gate.drain();
    await groupCommit.idle();
    await checkpoints.idle();
    // A write or sync that failed meanwhile leaves the tail unknown: refuse as puts do.
    gate.truncating = false;
    gate.check();
    gate.truncating = true;
    checkTruncateTarget(core, offset);
    if (offset === commitLog.wroteOffset) return;
    const run = truncateFiles(core, offset).catch((err) => {
      // Cut halfway: the marker stays, and the restart's recovery finishes the cut.
      gate.fail(err as Error);
      throw new StoreError(
        "STORE_NOT_WRITABLE",
        `Cannot finish truncating the CommitLog to offset ${offset}; the store stops taking writes and its restart completes the cut`,
        { cause: err },
      );
    });
    // Checkpoints wait for the cut (they would write offsets it is changing).
    checkpoints.holdDuring(run);
    await run;
  } finally {
    gate.truncating = false;
  }
}

function checkTruncateTarget(core: StoreCore, offset: number) {
  const { commitLog } = core;
  const min = commitLog.minOffset, max = commitLog.wroteOffset;
  const illegal = (why: string) =>
    new ReplicaError(
      "REPLICA_OFFSET_ILLEGAL",
      `Cannot truncate the CommitLog to offset ${offset} as ${why}`,
    );
  if (!Number.isSafeInteger(offset) || offset < min || offset > max) {
    throw illegal(`the log holds [${min}, ${max}]`);
  }
  if (offset === max || offset % commitLog.segmentBytes === 0) return;
  const head = commitLog.read(offset, 8);
  if (!head || !isRecordHead(head)) throw illegal("it is not a record boundary");
}

async function truncateFiles(core: StoreCore, offset: number) {
  const { files, root, commitLog, groupCommit, consumeQueues, index } = core;
  await writeTruncateMarker(files, root, offset);
  core.dispatcher.dropFrom(offset);
  await commitLog.truncateTo(offset);
  groupCommit.reset(offset);
  for (const cq of consumeQueues.all()) cq.truncateFromPhysical(offset);
  core.sequencer.clear();
  await index.flush();
  await index.recoverAfterCrash(offset);
  await core.checkpoints.write();
  await removeTruncateMarker(files, root);
}
