// ReceiveMessage (server streaming; reference/rocketmq-grpc.md §4.2, §11.4): a POP
// receive through ConsumerApi.receive, long polling for up to long_polling_timeout
// (bounded by pullWaitMsMax and the call's deadline), each message invisible for
// invisible_duration. Answer: status, one response per message, delivery_timestamp, end.
// Nothing found: MESSAGE_NOT_FOUND after the poll time, as the proxy answers.
import type * as grpc from "@grpc/grpc-js";
import type { Caller } from "./auth.ts";
import { cancelSignal, msLeft, type Req, serverStream, type StreamRes } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { tagsOf } from "./filter.ts";
import { encodeDelivered } from "./delivered_wire.ts";
import { fromMs, toMs } from "./message.ts";
import { Code, OK, status } from "./status.ts";

/** Messages per receive when the client names none (the proxy's cap). */
const BATCH_DEFAULT = 32;
/** Time kept back from the call's deadline so the answer arrives before it. */
const DEADLINE_MARGIN_MS = 500;

async function receive(
  deps: GrpcDeps,
  req: Req,
  caller: Caller,
  call: grpc.ServerWritableStream<Req, StreamRes>,
): Promise<void> {
  const group = deps.names.inward(req.group, caller.namespace, "group");
  const topic = deps.names.inward(req.messageQueue?.topic, caller.namespace, "topic");
  deps.auth.allow(caller, "subscribe", { topic, group });
  const tags = tagsOf(req.filterExpression);
  // auto_renew (PushConsumer): leased for invisible_duration or grpcAutoRenewMs, renewed
  // by renew.ts until settled.
  const renew = req.autoRenew ? deps.renewals : undefined;
  const invisibleMs = toMs(req.invisibleDuration) ?? renew?.options.leaseMs;
  const left = msLeft(call, deps.nowMs()) - DEADLINE_MARGIN_MS;
  const waitMs = Math.max(
    0,
    Math.min(toMs(req.longPollingTimeout) ?? deps.pullWaitMsMax, deps.pullWaitMsMax, left),
  );
  const max = req.batchSize > 0 ? req.batchSize : BATCH_DEFAULT;
  const messages = await deps.api.call((b) =>
    b.receive(group, { topic, max, invisibleMs, waitMs }, () => cancelSignal(call))
  );
  const kept = tags ? messages.filter((m) => m.tag !== undefined && tags.has(m.tag)) : messages;
  if (kept.length < messages.length) {
    const dropped = messages.filter((m) => !kept.includes(m)).map((m) => m.receiptHandle);
    await deps.api.call((b) => b.ackBatch(group, dropped));
  }
  if (call.cancelled) {
    // The client is gone: give the messages back at once rather than after invisibleMs.
    await Promise.allSettled(
      kept.map((m) => deps.api.call((b) => b.nack(group, m.receiptHandle, 0))),
    );
    return;
  }
  if (kept.length === 0) {
    call.write({ status: status(Code.MESSAGE_NOT_FOUND, "No new message") });
  } else {
    call.write({ status: OK });
    if (renew && invisibleMs) {
      renew.hold(group, caller.clientId, kept.map((m) => m.receiptHandle), invisibleMs);
    }
    for (const m of kept) {
      call.write(encodeDelivered(m, deps.names, caller.namespace, deps.storeHost));
    }
  }
  call.write({ deliveryTimestamp: fromMs(deps.nowMs()) });
}

export function receiveHandlers(deps: GrpcDeps) {
  return {
    receiveMessage: serverStream(
      deps,
      "ReceiveMessage",
      (req, caller, call) => receive(deps, req, caller, call),
    ),
  };
}
