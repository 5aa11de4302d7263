// The replica side of the CommitLog (reference/rocketmq.md §15; runtime/ha/replication.ts):
// reading whole records for a slave, and appending the master's bytes on a slave.
import type { StoreCore } from "../store_core.ts";
import type { Durability, ReplicatedAppend } from "../store_types.ts";
import {
  type CommitLogChunk,
  readWholeRecords,
  verifyReplicated,
} from "../commit_log/replica_io.ts";
import { buildsConsumeQueue, dispatchRequestOf } from "../dispatch_request.ts";
import { ReplicaError } from "./replica_errors.ts";

/**
 * Whole records of the CommitLog from `from` (a record boundary in [min, max]), at most
 * `maxBytes` unless one record is larger, never past `endOffset` or a segment end; a
 * closing BLANK is included and `nextOffset` is then the next segment's start. Only
 * written bytes are read. Throws REPLICA_OFFSET_ILLEGAL outside the log and
 * CorruptRecordError when `from` is not a record boundary.
 */
export function readCommitLogBytes(
  core: Pick<StoreCore, "commitLog" | "recordBytesMax">,
  from: number,
  maxBytes: number,
  endOffset: number,
): CommitLogChunk {
  const { commitLog } = core;
  const min = commitLog.minOffset, max = commitLog.wroteOffset;
  if (!Number.isSafeInteger(from) || from < min || from > max) {
    throw new ReplicaError(
      "REPLICA_OFFSET_ILLEGAL",
      `Cannot read CommitLog bytes from offset ${from} as the log holds [${min}, ${max})`,
    );
  }
  return readWholeRecords(commitLog, from, maxBytes, endOffset, core.recordBytesMax);
}

/**
 * Appends bytes copied from the master's CommitLog at `physicalOffset`, which must be this
 * log's end (an empty log also takes any segment start). Each record is verified (whole,
 * body CRC, PHYSICALOFFSET equal to where it lands, inside its segment, next queue offset
 * of its queue) and dispatched to ConsumeQueues and index as a put is, with the queue
 * offsets the records carry. The bytes are written before this returns, so the next chunk
 * may be appended at once; the promise settles as a put does: after fdatasync under
 * SYNC_FLUSH (group commit), once written under ASYNC_FLUSH.
 *
 * Errors (the promise rejects): STORE_NOT_WRITABLE (StoreError) as for puts;
 * REPLICA_OFFSET_MISMATCH when the offset is not the end or local puts are pending;
 * REPLICA_RECORD_CORRUPT at the first bad record, after the good records before it were
 * appended (error.offset is where they end): nothing beyond the last good record is.
 */
export function appendReplicated(
  core: StoreCore,
  physicalOffset: number,
  bytes: Uint8Array,
): Promise<ReplicatedAppend> {
  const { commitLog, groupCommit, gate, dispatcher, sequencer } = core;
  gate.check();
  const max = commitLog.wroteOffset;
  const segmentBytes = commitLog.segmentBytes;
  const emptyLog = commitLog.segments.length === 0;
  const pending = commitLog.hasPending || gate.writeScheduled;
  if (pending || (physicalOffset !== max && !(emptyLog && physicalOffset % segmentBytes === 0))) {
    throw new ReplicaError(
      "REPLICA_OFFSET_MISMATCH",
      `Cannot append replicated bytes at offset ${physicalOffset} as the CommitLog ends at ${max}${
        pending ? " with local puts pending" : ""
      }`,
    );
  }
  if (physicalOffset !== max) {
    // An empty replica starts where the master's retained log starts.
    commitLog.setEnd(physicalOffset);
    groupCommit.reset(physicalOffset);
    dispatcher.resetTo(physicalOffset);
  }
  const verified = verifyReplicated(bytes, physicalOffset, {
    segmentBytes,
    recordBytesMax: core.recordBytesMax,
    nextQueueOffset: (topic, queueId) => sequencer.expectedQueueOffset(topic, queueId),
  });
  let records = 0;
  try {
    for (const item of verified.items) {
      if (item.kind === "blank") {
        commitLog.appendVerified(item.bytes, true);
        continue;
      }
      const record = item.record;
      if (buildsConsumeQueue(record.sysFlag)) {
        sequencer.queuesOf(record.topic).set(record.queueId, record.queueOffset + 1);
      }
      dispatcher.push(dispatchRequestOf(record, core.delayLevelsMs));
      sequencer.noteStoreTimestamp(record.storeTimestamp);
      commitLog.appendVerified(item.bytes, false);
      records++;
    }
    commitLog.writePending();
  } catch (err) {
    throw gate.writeFailed(err);
  }
  const end = verified.end;
  const durable: Promise<Durability> = core.config.flushDiskType === "SYNC_FLUSH"
    ? groupCommit.waitFlushed(end).then(() => "FLUSHED")
    : Promise.resolve(end <= groupCommit.flushedOffset ? "FLUSHED" : "WRITTEN");
  if (verified.failure) {
    durable.catch(() => {}); // the good prefix is flushed with the next sync all the same
    throw new ReplicaError(
      "REPLICA_RECORD_CORRUPT",
      `Cannot append replicated record at offset ${verified.failure.offset} as ${verified.failure.reason}; the ${records} records before it were appended`,
      verified.failure.offset,
    );
  }
  return durable.then((durability) => ({
    fromOffset: physicalOffset,
    toOffset: end,
    records,
    durability,
  }));
}
