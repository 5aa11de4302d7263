// Queue ranges, lookups and topic admin of the broker role: GET_MAX_OFFSET (30),
// GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29), VIEW_MESSAGE_BY_ID (33),
// QUERY_MESSAGE (12), UPDATE_AND_CREATE_TOPIC (17), GET_BROKER_RUNTIME_INFO (28).
import { type RemotingCommand, responseTo } from "./codec.ts";
import { ResponseCode } from "./codes.ts";
import {
  int,
  jsonBody,
  ok,
  optionalInt,
  optionalText,
  type RemotingCore,
  text,
} from "./headers.ts";
import { concatBytes } from "./message.ts";

export async function handleQueueOffset(
  core: RemotingCore,
  req: RemotingCommand,
  which: "max" | "min",
): Promise<RemotingCommand> {
  const range = await core.queueRange(text(req, "topic"), int(req, "queueId"));
  return ok(req, { offset: which === "max" ? range.maxOffset : range.minOffset });
}

export async function handleSearchOffset(
  core: RemotingCore,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const offset = await core.offsetByTime(
    text(req, "topic"),
    int(req, "queueId"),
    int(req, "timestamp"),
  );
  return ok(req, { offset });
}

export async function handleViewById(
  core: RemotingCore,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const offset = int(req, "offset");
  const record = await core.recordAt(offset);
  if (!record) {
    return responseTo(req, ResponseCode.SYSTEM_ERROR, `No message at CommitLog offset ${offset}`);
  }
  return ok(req, {}, record);
}

export async function handleQueryMessage(
  core: RemotingCore,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const topic = text(req, "topic");
  const key = text(req, "key");
  const records = await core.findRecords(topic, {
    key,
    maxNum: optionalInt(req, "maxNum"),
    beginTimestamp: optionalInt(req, "beginTimestamp"),
    endTimestamp: optionalInt(req, "endTimestamp"),
  });
  if (records.length === 0) {
    return responseTo(req, ResponseCode.QUERY_NOT_FOUND, `No message of ${topic} with key ${key}`);
  }
  return ok(
    req,
    { indexLastUpdateTimestamp: 0, indexLastUpdatePhyoffset: 0 },
    concatBytes(records),
  );
}

export async function handleCreateTopic(
  core: RemotingCore,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const order = optionalText(req, "order");
  await core.upsertTopic(text(req, "topic"), {
    readQueueNums: optionalInt(req, "readQueueNums"),
    writeQueueNums: optionalInt(req, "writeQueueNums"),
    perm: optionalInt(req, "perm"),
    order: order === undefined ? undefined : order === "true",
  });
  return ok(req);
}

export async function handleRuntimeInfo(
  core: RemotingCore,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const h = await core.health();
  const table: Record<string, string> = {
    brokerVersionDesc: "edgemq",
    brokerName: h.brokerName,
    status: h.status,
    writable: String(h.writable),
    flushDiskType: h.flushDiskType,
    commitLogMaxOffset: String(h.commitLogMaxOffset),
    runtime: h.runtime,
  };
  return ok(req, {}, jsonBody({ table }));
}
