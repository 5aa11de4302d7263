// SendMessage, RecallMessage and EndTransaction (reference/rocketmq-grpc.md §4, §8, §9).
// One ProducerApi.produce per message: FIFO's message group is our sharding key (one
// queue per group, chosen by the broker), a DELAY message's delivery timestamp our
// deliverAt (the timer wheel), the client's message id our UNIQ_KEY.
import { Buffer } from "node:buffer";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { ProduceResult } from "../../runtime/protocol/types.ts";
import { answerStatus, type Req, type Res, unary } from "./calls.ts";
import type { GrpcDeps } from "./deps.ts";
import { MessageType, type SentMessage, toProduceMessage } from "./message.ts";
import { Code, OK, type Status, status } from "./status.ts";

/** Recall handle: base64url of "v1 <topic> <brokerName> <deliverAt> <messageId>" (the
 * proxy's layout, §8), given for delayed messages. */
function recallHandle(brokerName: string, r: ProduceResult): string {
  if (r.deliverAt === undefined) return "";
  const text = `v1 ${r.topic} ${brokerName} ${r.deliverAt} ${r.messageId}`;
  return Buffer.from(text).toString("base64url");
}

function readRecallHandle(handle: string): { topic: string; messageId: string } {
  const parts = Buffer.from(handle, "base64url").toString().split(" ");
  if (parts.length !== 5 || parts[0] !== "v1") {
    throw new BrokerError("INVALID_PARAMETER", "Cannot recall: the recall handle is malformed");
  }
  return { topic: parts[1], messageId: parts[4] };
}

/** The top status of several entries: their common code, else MULTIPLE_RESULTS. */
export function topStatus(entries: { status: Status }[]): Status {
  const first = entries[0]?.status ?? OK;
  return entries.every((e) => e.status.code === first.code)
    ? first
    : status(Code.MULTIPLE_RESULTS, "Entries have different results");
}

export function sendHandlers(deps: GrpcDeps) {
  return {
    sendMessage: unary(deps, "SendMessage", async (req: Req, caller): Promise<Res> => {
      const messages: SentMessage[] = req.messages ?? [];
      if (messages.length === 0) {
        return { status: status(Code.MESSAGE_CORRUPTED, "Cannot send: no message in the request") };
      }
      const entries = [];
      for (const m of messages) {
        const topic = deps.names.inward(m.topic, caller.namespace, "topic");
        deps.auth.allow(caller, "publish", { topic });
        const messageId = m.systemProperties?.messageId ?? "";
        try {
          if (m.systemProperties?.messageType === MessageType.TRANSACTION && deps.transactions) {
            // A half message (transactions.ts): delivered on EndTransaction COMMIT.
            const r = await deps.transactions.begin(topic, toProduceMessage(m));
            entries.push({ status: OK, messageId: r.messageId, transactionId: r.transactionId });
            continue;
          }
          if (m.systemProperties?.messageType === MessageType.TRANSACTION) {
            throw new BrokerError(
              "INVALID_PARAMETER",
              "Cannot send a transactional message: this broker does not serve transactions",
            );
          }
          const r = await deps.api.call((b) => b.produce(topic, toProduceMessage(m)));
          entries.push({
            status: OK,
            messageId: r.messageId,
            transactionId: "",
            offset: Math.max(r.queueOffset, 0),
            recallHandle: recallHandle(deps.brokerName, r),
          });
        } catch (err) {
          if (
            err instanceof BrokerError && (err.code === "UNAUTHORIZED" || err.code === "FORBIDDEN")
          ) {
            throw err;
          }
          entries.push({ status: answerStatus(deps, "SendMessage", err), messageId });
        }
      }
      return { status: topStatus(entries), entries };
    }),
    recallMessage: unary(deps, "RecallMessage", async (req: Req, caller): Promise<Res> => {
      const { topic, messageId } = readRecallHandle(String(req.recallHandle ?? ""));
      deps.auth.allow(caller, "publish", { topic });
      await deps.api.call((b) => b.cancelScheduled(topic, messageId));
      return { status: OK, messageId };
    }),
    endTransaction: unary(deps, "EndTransaction", async (req: Req, caller): Promise<Res> => {
      const topic = deps.names.inward(req.topic, caller.namespace, "topic");
      deps.auth.allow(caller, "publish", { topic });
      if (!req.transactionId) {
        return {
          status: status(
            Code.INVALID_TRANSACTION_ID,
            "Cannot end a transaction: no transaction_id",
          ),
        };
      }
      // The hook transactions plug into (functions/grpc/deps.ts TransactionHook).
      if (!deps.transactions) {
        return {
          status: status(
            Code.NOT_IMPLEMENTED,
            "Cannot end a transaction: this broker does not serve transactional messages yet",
          ),
        };
      }
      await deps.transactions.end({
        topic,
        messageId: String(req.messageId ?? ""),
        transactionId: String(req.transactionId),
        resolution: req.resolution === 1 ? "COMMIT" : req.resolution === 2 ? "ROLLBACK" : "UNKNOWN",
        fromCheck: req.source === 2,
      });
      return { status: OK };
    }),
  };
}
