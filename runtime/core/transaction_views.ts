// What a transaction looks like to a caller: its view while undecided, the check of its id,
// and the rule for a repeated or conflicting decision (the same again answers the same; the
// other is TRANSACTION_DECIDED, HTTP 409).
import { BrokerError } from "../protocol/errors.ts";
import type { TransactionDecision, TransactionView } from "../protocol/transaction_types.ts";
import { MESSAGE_ID_PATTERN } from "../message_id.ts";
import type { PendingTx } from "./transaction_log.ts";

export function pendingView(tx: PendingTx): TransactionView {
  return {
    transactionId: tx.transactionId,
    messageId: tx.transactionId,
    topic: tx.topic,
    queueId: tx.queueId,
    producerGroup: tx.producerGroup,
    state: tx.checks === 0 ? "PREPARED" : "CHECKING",
    checks: tx.checks,
    bornTimestamp: tx.bornTimestamp,
  };
}

export function checkId(transactionId: string): void {
  if (!MESSAGE_ID_PATTERN.test(transactionId)) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot look up transaction ${
        JSON.stringify(transactionId.slice(0, 64))
      }: ids are 32 upper-case hex characters`,
    );
  }
}

const WANTED = { COMMIT: "COMMITTED", ROLLBACK: "ROLLED_BACK" } as const;

export function sameOrConflict(
  view: TransactionView,
  decision: TransactionDecision,
): TransactionView {
  if (view.state === WANTED[decision]) return view;
  throw new BrokerError(
    "TRANSACTION_DECIDED",
    `Cannot ${
      decision === "COMMIT" ? "commit" : "roll back"
    } transaction ${view.transactionId}: it is ${view.state}`,
    { state: view.state },
  );
}
