// PULL_MESSAGE (11): the core's pull with long polling, answered with the stored records as
// they are (reference/rocketmq.md §10-§11). The sys flags: commit offset (store the
// request's commitOffset first), suspend (hold up to suspendTimeoutMillis), subscription
// (the tag expression rides on the request; else the one from the group's heartbeat).
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { RemotingCommand } from "./codec.ts";
import { responseTo } from "./codec.ts";
import { PullSysFlag, ResponseCode } from "./codes.ts";
import type { RemotingConsumers } from "./consumers.ts";
import { int, optionalInt, optionalText, type RemotingCore, text } from "./headers.ts";
import { concatBytes } from "./message.ts";
import type { Connection } from "./server.ts";

export interface PullDeps {
  core: RemotingCore;
  consumers: RemotingConsumers;
}

export async function handlePull(
  d: PullDeps,
  req: RemotingCommand,
  conn: Connection,
): Promise<RemotingCommand> {
  const group = text(req, "consumerGroup");
  const topic = text(req, "topic");
  const queueId = int(req, "queueId");
  const offset = int(req, "queueOffset");
  const sysFlag = optionalInt(req, "sysFlag") ?? 0;
  const expressionType = optionalText(req, "expressionType");
  if (expressionType !== undefined && expressionType.toUpperCase() !== "TAG") {
    return responseTo(
      req,
      ResponseCode.SUBSCRIPTION_PARSE_FAILED,
      `Cannot filter by ${expressionType}: only TAG expressions are served`,
    );
  }
  const commitOffset = optionalInt(req, "commitOffset") ?? -1;
  if (sysFlag & PullSysFlag.COMMIT_OFFSET && commitOffset >= 0) {
    // Best effort, as RocketMQ: a commit that cannot be stored does not fail the pull.
    await d.core.commitOffset(group, topic, queueId, commitOffset).catch(() => {});
  }
  const tags = sysFlag & PullSysFlag.SUBSCRIPTION
    ? optionalText(req, "subscription")
    : d.consumers.subscription(group, topic);
  const waitMs = sysFlag & PullSysFlag.SUSPEND ? optionalInt(req, "suspendTimeoutMillis") ?? 0 : 0;
  const max = optionalInt(req, "maxMsgNums");
  try {
    const request = {
      offset,
      max: max !== undefined && max > 0 ? max : undefined,
      waitMs: 0,
      tags: tags === undefined || tags.trim() === "" ? undefined : tags,
    };
    // As RocketMQ: a pull that only skipped filtered messages answers at once with the
    // offset it reached (PULL_RETRY_IMMEDIATELY); only one that found nothing new is held.
    let got = await d.core.pullRecords(topic, queueId, request, conn.signal);
    if (got.status === "NO_NEW_MESSAGE" && waitMs > 0) {
      got = await d.core.pullRecords(topic, queueId, { ...request, waitMs }, conn.signal);
    }
    const header = {
      nextBeginOffset: String(got.nextOffset),
      minOffset: String(got.minOffset),
      maxOffset: String(got.maxOffset),
      suggestWhichBrokerId: "0",
    };
    if (got.status === "FOUND") {
      return responseTo(req, ResponseCode.SUCCESS, "FOUND", header, concatBytes(got.records));
    }
    const code = got.status === "NO_MATCHED_MESSAGE"
      ? ResponseCode.PULL_RETRY_IMMEDIATELY
      : ResponseCode.PULL_NOT_FOUND;
    return responseTo(req, code, got.status, header);
  } catch (err) {
    if (!(err instanceof BrokerError) || err.code !== "OFFSET_OUT_OF_RANGE") throw err;
    // The client moves to nextBeginOffset: the nearest end of the valid range.
    const minOffset = Number(err.extensions.minOffset ?? 0);
    const maxOffset = Number(err.extensions.maxOffset ?? 0);
    return responseTo(req, ResponseCode.PULL_OFFSET_MOVED, err.message, {
      nextBeginOffset: String(offset < minOffset ? minOffset : maxOffset),
      minOffset: String(minOffset),
      maxOffset: String(maxOffset),
      suggestWhichBrokerId: "0",
    });
  }
}
