// A push consumer's conversation with the broker role: HEART_BEAT (34), UNREGISTER_CLIENT
// (35), GET_CONSUMER_LIST_BY_GROUP (38), QUERY/UPDATE_CONSUMER_OFFSET (14/15),
// CONSUMER_SEND_MSG_BACK (36) and LOCK/UNLOCK_BATCH_MQ (41/42) for ordered consumption.
// The state is the core's (membership, offsets, locks), shared with every front end.
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { GroupSettings } from "../../runtime/protocol/types.ts";
import { type RemotingCommand, responseTo } from "./codec.ts";
import { ResponseCode } from "./codes.ts";
import type { RemotingConsumers } from "./consumers.ts";
import {
  int,
  jsonBody,
  ok,
  optionalInt,
  optionalText,
  parseJsonBody,
  type RemotingCore,
  text,
} from "./headers.ts";
import type { Connection } from "./server.ts";

export interface ConsumerDeps {
  core: RemotingCore;
  consumers: RemotingConsumers;
  /** autoCreateSubscriptionGroup: a heartbeat creates its group. */
  autoCreateGroups: boolean;
}

interface HeartbeatData {
  clientID?: string;
  consumerDataSet?: {
    groupName?: string;
    messageModel?: string;
    consumeFromWhere?: string;
    subscriptionDataSet?: { topic?: string; subString?: string }[];
  }[];
}

interface LockBody {
  consumerGroup?: string;
  clientId?: string;
  mqSet?: { topic: string; brokerName: string; queueId: number }[];
}

const isGroupTopic = (t: string) => t.startsWith("%RETRY%") || t.startsWith("%DLQ%");

export async function handleHeartbeat(
  d: ConsumerDeps,
  req: RemotingCommand,
  conn: Connection,
): Promise<RemotingCommand> {
  const data = parseJsonBody<HeartbeatData>(req);
  const clientId = String(data?.clientID ?? "");
  if (!clientId) {
    throw new BrokerError("INVALID_PARAMETER", "Cannot take a heartbeat without clientID");
  }
  for (const c of data.consumerDataSet ?? []) {
    const group = String(c.groupName ?? "");
    await ensureGroup(d, group, c.messageModel);
    const subscriptions: { topic: string; tags?: string }[] = [];
    for (const s of c.subscriptionDataSet ?? []) {
      if (typeof s?.topic !== "string") continue;
      d.consumers.subscribe(group, s.topic, s.subString ?? "*");
      // Membership counts the client's topics that exist (its retry topic never does).
      if (isGroupTopic(s.topic)) continue;
      const exists = await d.core.getTopic(s.topic).then(() => true, () => false);
      if (exists) subscriptions.push({ topic: s.topic, tags: s.subString ?? "*" });
    }
    const before = await d.core.groupMembers(group);
    const after = await d.core.heartbeat(group, { clientId, subscriptions });
    d.consumers.bind(conn, group, clientId);
    if (after.generation !== before.generation) d.consumers.notifyChanged(group);
  }
  return ok(req);
}

export async function ensureGroup(d: ConsumerDeps, group: string, model?: string): Promise<void> {
  const exists = await d.core.getGroup(group).then(() => true, (err) => {
    if (err instanceof BrokerError && err.code === "GROUP_NOT_FOUND") return false;
    throw err;
  });
  if (exists) return;
  if (!d.autoCreateGroups) {
    throw new BrokerError(
      "GROUP_NOT_FOUND",
      `No consumer group ${group} and autoCreateSubscriptionGroup is off; create it first`,
    );
  }
  const settings: GroupSettings = {};
  if (model === "BROADCASTING" || model === "CLUSTERING") settings.messageModel = model;
  await d.core.upsertGroup(group, settings);
}

export async function handleUnregister(
  d: ConsumerDeps,
  req: RemotingCommand,
  conn: Connection,
): Promise<RemotingCommand> {
  const clientId = text(req, "clientID");
  const group = optionalText(req, "consumerGroup");
  if (group !== undefined) {
    d.consumers.unbind(conn, group);
    await unregister(d, group, clientId);
  }
  return ok(req);
}

/** Drops a client from its group and tells the rest to rebalance. */
export async function unregister(d: ConsumerDeps, group: string, clientId: string) {
  const view = await d.core.unregister(group, clientId).catch(() => undefined);
  if (view) d.consumers.notifyChanged(group);
}

export async function handleConsumerList(
  d: ConsumerDeps,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const view = await d.core.groupMembers(group);
  return ok(req, {}, jsonBody({ consumerIdList: view.members }));
}

export async function handleQueryOffset(
  d: ConsumerDeps,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const topic = text(req, "topic");
  const queueId = int(req, "queueId");
  const info = await d.core.getOffset(group, topic, queueId).catch((err) => {
    if (err instanceof BrokerError && err.code === "GROUP_NOT_FOUND") return undefined;
    throw err;
  });
  if (info && info.offset >= 0) return ok(req, { offset: info.offset });
  // RocketMQ's first boot: a queue that still holds its first message starts at 0.
  const range = await d.core.queueRange(topic, queueId);
  if (range.minOffset <= 0) return ok(req, { offset: 0 });
  return responseTo(
    req,
    ResponseCode.QUERY_NOT_FOUND,
    `No offset of ${group} for ${topic}:${queueId}`,
  );
}

export async function handleUpdateOffset(
  d: ConsumerDeps,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const topic = text(req, "topic");
  const queueId = int(req, "queueId");
  const offset = int(req, "commitOffset");
  if (offset >= 0) await d.core.commitOffset(group, topic, queueId, offset);
  return ok(req);
}

export async function handleSendBack(
  d: ConsumerDeps,
  req: RemotingCommand,
): Promise<RemotingCommand> {
  const group = text(req, "group");
  await d.core.sendBack(group, {
    commitLogOffset: int(req, "offset"),
    delayLevel: optionalInt(req, "delayLevel") ?? 0,
    maxReconsumeTimes: optionalInt(req, "maxReconsumeTimes"),
    originMessageId: optionalText(req, "originMsgId"),
  });
  return ok(req);
}

export async function handleLock(
  d: ConsumerDeps,
  req: RemotingCommand,
  unlock: boolean,
): Promise<RemotingCommand> {
  const body = parseJsonBody<LockBody>(req);
  const group = String(body?.consumerGroup ?? "");
  const clientId = String(body?.clientId ?? "");
  const byTopic = new Map<string, LockBody["mqSet"] & object>();
  for (const mq of body?.mqSet ?? []) {
    const list = byTopic.get(mq.topic) ?? [];
    list.push(mq);
    byTopic.set(mq.topic, list);
  }
  const locked: NonNullable<LockBody["mqSet"]> = [];
  for (const [topic, mqs] of byTopic) {
    const ids = mqs.map((m) => m.queueId);
    const held = await d.core.lockQueues(group, clientId, topic, ids, unlock);
    for (const m of mqs) if (held.includes(m.queueId)) locked.push(m);
  }
  return unlock ? ok(req) : ok(req, {}, jsonBody({ lockOKMQSet: locked }));
}
