// The put path: a record gets its queue offset and store time, is appended to the CommitLog
// (written with the other puts of this event-loop turn) and queued for dispatch. The promise
// settles once written (ASYNC_FLUSH) or flushed (SYNC_FLUSH).
import type { PreparedRecord } from "./message/record.ts";
import { buildsConsumeQueue, consumeQueueTagsCode, keysOf } from "./dispatch_request.ts";
import { PROPERTY_KEYS, PROPERTY_UNIQ_KEY } from "./message/message_const.ts";
import type { StoreCore } from "./store_core.ts";
import type { Durability, PutResult } from "./store_types.ts";

/** Appends a prepared record; throws STORE_NOT_WRITABLE (StoreError) when writes are refused. */
export function putPrepared(core: StoreCore, prepared: PreparedRecord): Promise<PutResult> {
  const { gate, sequencer, commitLog, groupCommit } = core;
  gate.check();
  // PREPARED and ROLLBACK records get no ConsumeQueue unit and QUEUEOFFSET 0 (RocketMQ),
  // as recovery and replicas derive from the record's SYSFLAG.
  const sysFlag = prepared.sysFlag;
  const inQueue = buildsConsumeQueue(sysFlag);
  const queues = inQueue ? sequencer.queuesOf(prepared.topic) : undefined;
  const queueOffset = queues === undefined
    ? 0
    : sequencer.queueOffsetOf(queues, prepared.topic, prepared.queueId);
  const storeTimestamp = sequencer.nextStoreTimestamp(core.nowMs());
  let position;
  try {
    position = commitLog.append(prepared, queueOffset, storeTimestamp);
  } catch (err) {
    // Appending wrote what was gathered (a full buffer, a segment's end) and that failed.
    throw gate.writeFailed(err);
  }
  queues?.set(prepared.queueId, queueOffset + 1);
  const props = prepared.properties;
  core.dispatcher.push({
    topic: prepared.topic,
    queueId: prepared.queueId,
    commitLogOffset: position.physicalOffset,
    msgSize: position.size,
    tagsCode: consumeQueueTagsCode(
      prepared.topic,
      props,
      storeTimestamp,
      core.delayLevelsMs,
    ),
    storeTimestamp,
    consumeQueueOffset: queueOffset,
    keys: keysOf(props.get(PROPERTY_KEYS)),
    uniqKey: props.get(PROPERTY_UNIQ_KEY),
    sysFlag,
  });
  const end = position.physicalOffset + position.size;
  const result = (durability: Durability): PutResult => ({
    topic: prepared.topic,
    queueId: prepared.queueId,
    queueOffset,
    commitLogOffset: position.physicalOffset,
    size: position.size,
    storeTimestamp,
    durability,
  });
  const epoch = gate.dropEpoch;
  const offset = position.physicalOffset;
  if (core.config.flushDiskType === "SYNC_FLUSH") {
    return gate.scheduleWrite().then(() => {
      gate.checkWritten(epoch, offset);
      return groupCommit.waitFlushed(end);
    }).then(() => result("FLUSHED"));
  }
  // One reaction per put on the hot path (ASYNC_FLUSH): the write check and the answer.
  return gate.scheduleWrite().then(() => {
    gate.checkWritten(epoch, offset);
    return result(end <= groupCommit.flushedOffset ? "FLUSHED" : "WRITTEN");
  });
}
