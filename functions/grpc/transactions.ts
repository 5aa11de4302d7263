// Transactions over gRPC (reference/rocketmq-grpc.md §4, §5, §9; docs/transactions.md): a
// SendMessage of message_type TRANSACTION stores a half message (the producer group is the
// topic, as the proxy registers it); EndTransaction commits or rolls back; a producer's
// Telemetry session that publishes a topic is a check channel of that topic's group, and a
// check goes to it as RecoverOrphanedTransactionCommand{message, transaction_id}. The
// producer answers with EndTransaction (source SERVER_CHECK).
import type * as grpc from "@grpc/grpc-js";
import type { TransactionApi, TransactionCheckHost } from "../../runtime/protocol/core_api.ts";
import type { ProduceMessage } from "../../runtime/protocol/types.ts";
import type { ApiSource } from "../routes/route.ts";
import { transactionsOf } from "../routes/transactions_of.ts";
import type { Req, Res } from "./calls.ts";
import type { Log, TransactionHook } from "./deps.ts";
import { toDeliveredMessage } from "./message.ts";
import type { Names } from "./resources.ts";

/** The hook the gRPC front end calls (deps.ts), over the core's TransactionApi. */
export function transactionHook(api: ApiSource<unknown>, log: Log): TransactionHook {
  return {
    begin: (topic: string, message: ProduceMessage) =>
      api.call((b) => transactionsOf(b).beginTransaction(topic, message, topic)),
    async end(r) {
      if (r.resolution === "UNKNOWN") return; // asked again later
      await api.call((b) =>
        transactionsOf(b).endTransaction(r.transactionId, r.resolution as "COMMIT", {
          fromCheck: r.fromCheck,
        })
      );
    },
    async checksFor(topics, send) {
      const host = await api.get() as Partial<TransactionCheckHost & TransactionApi>;
      if (typeof host.registerTransactionCheckChannel !== "function") return () => {};
      const unregister = topics.map((topic) =>
        host.registerTransactionCheckChannel!(topic, {
          send: (check) => {
            send(check);
            return Promise.resolve(undefined); // the answer comes as EndTransaction
          },
        })
      );
      log("debug", "gRPC producer registered for transaction checks", { topics });
      return () => unregister.forEach((f) => f());
    },
  };
}

/** Writes a check on a producer's Telemetry stream. */
export function checkWriter(
  call: grpc.ServerDuplexStream<Req, Res>,
  names: Names,
  namespace: string,
  storeHost: string,
) {
  return (check: { transactionId: string; message: Parameters<typeof toDeliveredMessage>[0] }) => {
    if (call.cancelled || call.writableEnded) throw new Error("the producer's stream is closed");
    call.write({
      recoverOrphanedTransactionCommand: {
        message: toDeliveredMessage(check.message, names, namespace, storeHost),
        transactionId: check.transactionId,
      },
    });
  };
}
