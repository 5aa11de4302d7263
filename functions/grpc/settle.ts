// AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue (reference/
// rocketmq-grpc.md §4, §4.3) over the POP calls of ConsumerApi. Our receipt handles stay
// valid when the invisible time changes, so ChangeInvisibleDuration answers the same
// handle (the client uses whatever comes back).
import type { Caller } from "./auth.ts";
import { type Req, type Res, unary } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { toMs } from "./message.ts";
import { topStatus } from "./send.ts";
import { Code, OK, status, statusOf } from "./status.ts";
import { BrokerError, type ProblemCode } from "../../runtime/protocol/errors.ts";

function groupAndTopic(deps: GrpcDeps, req: Req, caller: Caller) {
  const group = deps.names.inward(req.group, caller.namespace, "group");
  const topic = deps.names.inward(req.topic, caller.namespace, "topic");
  deps.auth.allow(caller, "subscribe", { topic, group });
  return { group, topic };
}

export function settleHandlers(deps: GrpcDeps) {
  return {
    ackMessage: unary(deps, "AckMessage", async (req: Req, caller): Promise<Res> => {
      const { group } = groupAndTopic(deps, req, caller);
      const asked: { messageId?: string; receiptHandle?: string }[] = req.entries ?? [];
      if (asked.length === 0) {
        return { status: status(Code.BAD_REQUEST, "Cannot ack: no entry in the request") };
      }
      const handles = asked.map((e) => String(e.receiptHandle ?? ""));
      for (const h of handles) deps.renewals?.release(h);
      const results = await deps.api.call((b) => b.ackBatch(group, handles));
      const entries = results.map((r, i) => ({
        messageId: asked[i].messageId ?? "",
        receiptHandle: r.receiptHandle,
        status: r.ok ? OK : statusOf(new BrokerError(r.error.code as ProblemCode, r.error.detail)),
      }));
      return { status: topStatus(entries), entries };
    }),
    changeInvisibleDuration: unary(
      deps,
      "ChangeInvisibleDuration",
      async (req: Req, caller): Promise<Res> => {
        const { group } = groupAndTopic(deps, req, caller);
        const invisibleMs = toMs(req.invisibleDuration);
        if (invisibleMs === undefined) {
          return {
            status: status(Code.ILLEGAL_INVISIBLE_TIME, "Cannot change: no invisible_duration"),
          };
        }
        const handle = String(req.receiptHandle ?? "");
        deps.renewals?.release(handle); // the client takes the message's time over
        // nack is changeInvisibleTime without its lower bound (popInvisibleMsMin): push
        // consumers give a message back with a delay of 0 or a few ms (§4.3).
        await deps.api.call((b) => b.nack(group, handle, invisibleMs));
        return { status: OK, receiptHandle: handle };
      },
    ),
    forwardMessageToDeadLetterQueue: unary(
      deps,
      "ForwardMessageToDeadLetterQueue",
      async (req: Req, caller): Promise<Res> => {
        const { group } = groupAndTopic(deps, req, caller);
        const handle = String(req.receiptHandle ?? "");
        deps.renewals?.release(handle);
        const done = await deps.api.call(async (b) => {
          if (!b.deadLetter) return false;
          await b.deadLetter(group, handle);
          return true;
        });
        return done ? { status: OK } : {
          status: status(Code.UNSUPPORTED, "Cannot dead-letter here: this broker client lacks it"),
        };
      },
    ),
  };
}
