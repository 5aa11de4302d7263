// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): a client's message
// becomes the core's ProduceMessage (properties parsed, a compressed body inflated); the
// answer carries RocketMQ's offset message id, queue and queue offset.
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { ProduceResult } from "../../runtime/protocol/types.ts";
import type { RemotingCommand } from "./codec.ts";
import { RequestCode } from "./codes.ts";
import { ok, optionalInt, optionalText, type RemotingCore, text } from "./headers.ts";
import { decodeBatch, offsetHex, parseProperties, plainBody, toProduceMessage } from "./message.ts";

/** MessageSysFlag.TRANSACTION_PREPARED_TYPE. */
const TRANSACTION_PREPARED = 0x4;

/** SendMessageRequestHeaderV2's one-letter keys (reference/rocketmq.md §17). */
const V2_KEYS: Record<string, string> = {
  a: "producerGroup",
  b: "topic",
  c: "defaultTopic",
  d: "defaultTopicQueueNums",
  e: "queueId",
  f: "sysFlag",
  g: "bornTimestamp",
  h: "flag",
  i: "properties",
  j: "reconsumeTimes",
  k: "unitMode",
  l: "maxReconsumeTimes",
  m: "batch",
  n: "brokerName",
};

/** The V2 header under its long names, so one reader serves codes 10, 310 and 320. */
export function longHeader(req: RemotingCommand): RemotingCommand {
  if (req.code === RequestCode.SEND_MESSAGE) return req;
  const ext: Record<string, string> = {};
  for (const k in req.extFields) ext[V2_KEYS[k] ?? k] = req.extFields[k];
  return { ...req, extFields: ext };
}

export interface SendDeps {
  core: RemotingCore;
  /** offsetMessageIdPrefix() of the store host records carry. */
  idPrefix: string;
}

export async function handleSend(d: SendDeps, raw: RemotingCommand): Promise<RemotingCommand> {
  const req = longHeader(raw);
  const topic = text(req, "topic");
  const sysFlag = optionalInt(req, "sysFlag") ?? 0;
  const queueId = optionalInt(req, "queueId");
  const properties = parseProperties(optionalText(req, "properties"));
  if (sysFlag & TRANSACTION_PREPARED) {
    // A half message (transactions.ts): the producer group from the header, else PGROUP.
    const group = optionalText(req, "producerGroup") ?? properties.get("PGROUP") ?? "";
    const body = plainBody(req.body ?? new Uint8Array(), sysFlag);
    const message = toProduceMessage(body, properties, queueIdOf(queueId));
    return ok(req, answer(d, await d.core.beginTransaction(topic, message, group)));
  }
  if (req.code === RequestCode.SEND_BATCH_MESSAGE || optionalText(req, "batch") === "true") {
    return sendBatch(d, req, topic, queueId);
  }
  const body = plainBody(req.body ?? new Uint8Array(), sysFlag);
  const result = await d.core.produce(
    topic,
    toProduceMessage(body, properties, queueIdOf(queueId)),
  );
  return ok(req, answer(d, result));
}

async function sendBatch(
  d: SendDeps,
  req: RemotingCommand,
  topic: string,
  queueId: number | undefined,
): Promise<RemotingCommand> {
  const items = decodeBatch(req.body ?? new Uint8Array());
  if (items.length === 0) {
    throw new BrokerError("INVALID_PARAMETER", "Cannot send an empty batch");
  }
  // One queue for the whole batch, as RocketMQ writes a batch to one queue.
  const queue = queueIdOf(queueId) ?? 0;
  const messages = items.map((m) => {
    const message = toProduceMessage(m.body, parseProperties(m.properties), queue);
    if (message.delayLevel || message.delayMs !== undefined || message.deliverAt !== undefined) {
      throw new BrokerError("INVALID_PARAMETER", "Cannot delay a message in a batch");
    }
    return message;
  });
  const results = await d.core.produceBatch(topic, messages);
  const ids: string[] = [];
  let first: ProduceResult | undefined;
  for (const r of results) {
    if (!r.ok) {
      throw new BrokerError("INVALID_PARAMETER", `Batch item ${r.index}: ${r.error.detail}`);
    }
    first ??= r;
    ids.push(d.idPrefix + offsetHex(r.commitLogOffset));
  }
  return ok(req, { ...answer(d, first!), msgId: ids.join(",") });
}

/** Queue -1 (or none) lets the broker choose. */
function queueIdOf(queueId: number | undefined): number | undefined {
  return queueId === undefined || queueId < 0 ? undefined : queueId;
}

function answer(d: SendDeps, r: ProduceResult): Record<string, string | number> {
  return {
    msgId: d.idPrefix + offsetHex(r.commitLogOffset),
    queueId: r.queueId,
    queueOffset: r.queueOffset,
    // The core's message id (UNIQ_KEY), which HTTP lookups use, rides as the transaction id.
    transactionId: r.messageId,
    MSG_REGION: "DefaultRegion",
    TRACE_ON: "false",
  };
}
