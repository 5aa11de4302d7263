// POP for 5.x remoting clients (reference/rocketmq.md §19): POP_MESSAGE (200050),
// ACK_MESSAGE (200051) and CHANGE_MESSAGE_INVISIBLETIME (200053) over the core's receive,
// ack and changeInvisibleTime. The answer carries the stored records (a retry copy as it
// sits in %RETRY%{group}, with its reconsume count) and RocketMQ's startOffsetInfo /
// msgOffsetInfo, from which the client builds the extraInfo it echoes; pop_handles.ts maps
// that back to our receipt handle. A TAG expression is applied here: a popped message that
// does not match is acked at once, as RocketMQ's broker does.
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { PopMessage } from "../../runtime/protocol/types.ts";
import { type RemotingCommand, responseTo } from "./codec.ts";
import { ResponseCode } from "./codes.ts";
import { type ConsumerDeps, ensureGroup } from "./consumer_handlers.ts";
import { int, ok, optionalInt, optionalText, text } from "./headers.ts";
import { concatBytes } from "./message.ts";
import { parseExtraInfo, type PopHandles } from "./pop_handles.ts";
import { recordTopic, withReconsumeTimes } from "./record_bytes.ts";
import type { Connection } from "./server.ts";

export interface PopDeps extends ConsumerDeps {
  handles: PopHandles;
}

const REVIVE_QID = 0; // not 999: that marks an orderly pop to the client

export async function handlePop(
  d: PopDeps,
  req: RemotingCommand,
  conn: Connection,
): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const topic = text(req, "topic");
  const invisibleMs = int(req, "invisibleTime");
  const max = optionalInt(req, "maxMsgNums");
  const waitMs = Math.max(0, optionalInt(req, "pollTime") ?? 0);
  const expType = optionalText(req, "expType");
  if (expType !== undefined && expType.toUpperCase() !== "TAG") {
    return responseTo(
      req,
      ResponseCode.SUBSCRIPTION_PARSE_FAILED,
      `Cannot filter by ${expType}: only TAG expressions are served`,
    );
  }
  const tags = tagSet(optionalText(req, "exp"));
  const options = { topic, max: max && max > 0 ? max : undefined, invisibleMs, waitMs };
  const receive = () => d.core.receive(group, options, conn.signal);
  const popped = await receive().catch(async (err) => {
    if (!(err instanceof BrokerError) || err.code !== "GROUP_NOT_FOUND") throw err;
    await ensureGroup(d, group);
    return receive();
  });
  const popTime = d.handles.nextPopTime();
  const kept: { m: PopMessage; record: Uint8Array; retry: boolean }[] = [];
  const unwanted: string[] = [];
  for (const m of popped) {
    const stored = await d.core.recordAt(m.commitLogOffset);
    if (!stored || (tags && !tags.has(m.tag ?? ""))) {
      if (m.receiptHandle) unwanted.push(m.receiptHandle);
      continue;
    }
    const record = withReconsumeTimes(stored, m.reconsumeTimes);
    kept.push({ m, record, retry: recordTopic(record).startsWith("%RETRY%") });
  }
  if (unwanted.length) await d.core.ackBatch(group, unwanted);
  const header = { popTime, invisibleTime: invisibleMs, reviveQid: REVIVE_QID, restNum: 0 };
  if (kept.length === 0) {
    return responseTo(req, ResponseCode.PULL_NOT_FOUND, "no new message", stringify(header));
  }
  // Per (retry flag, queueId): the first offset and every offset, in queue order.
  const offsets = new Map<string, number[]>();
  for (const { m, retry } of kept) {
    const key = `${retry ? 1 : 0} ${m.queueId}`;
    offsets.set(key, [...offsets.get(key) ?? [], m.queueOffset]);
    // Broadcast pops have no handle: nothing to ack.
    if (m.receiptHandle) {
      d.handles.remember(
        group,
        { popTime, retry, queueId: m.queueId, queueOffset: m.queueOffset },
        m.receiptHandle,
        m.invisibleUntil,
      );
    }
  }
  const start: string[] = [];
  const each: string[] = [];
  for (const [key, list] of offsets) {
    list.sort((a, b) => a - b);
    start.push(`${key} ${list[0]}`);
    each.push(`${key} ${list.join(",")}`);
  }
  return ok(req, {
    ...header,
    startOffsetInfo: start.join(";"),
    msgOffsetInfo: each.join(";"),
    orderCountInfo: "",
  }, concatBytes(kept.map((k) => k.record)));
}

export async function handleAck(d: PopDeps, req: RemotingCommand): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const key = parseExtraInfo(text(req, "extraInfo"), optionalInt(req, "offset"));
  await d.core.ack(group, d.handles.take(group, key, false));
  return ok(req);
}

export async function handleChangeInvisible(
  d: PopDeps,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const invisibleMs = int(req, "invisibleTime");
  const key = parseExtraInfo(text(req, "extraInfo"), optionalInt(req, "offset"));
  const handle = d.handles.take(group, key, true);
  const { invisibleUntil } = await d.core.changeInvisibleTime(group, handle, invisibleMs);
  // The client rebuilds its extraInfo with the new popTime: the receipt moves to it.
  d.handles.take(group, key, false);
  const popTime = d.handles.nextPopTime();
  d.handles.remember(group, { ...key, popTime }, handle, invisibleUntil);
  return ok(req, { popTime, invisibleTime: invisibleMs, reviveQid: REVIVE_QID });
}

function tagSet(exp: string | undefined): Set<string> | undefined {
  if (exp === undefined || exp.trim() === "" || exp.trim() === "*") return undefined;
  return new Set(exp.split("||").map((t) => t.trim()).filter((t) => t !== ""));
}

function stringify(fields: Record<string, number>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in fields) out[k] = String(fields[k]);
  return out;
}
