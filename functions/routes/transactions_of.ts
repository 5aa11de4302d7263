// The transaction calls of a resolved broker, apart from the transaction routes: the produce
// route (begin) needs them on the first request, the routes of transactions.ts load lazily.
import type { TransactionApi } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";

/** The transaction calls of the broker, or a refusal when it serves none (a split-mode
 * broker client without client/transactions.ts). */
export function transactionsOf(api: unknown): TransactionApi {
  if (typeof (api as Partial<TransactionApi>).endTransaction !== "function") {
    throw new BrokerError(
      "BAD_REQUEST",
      "Cannot use transactions: the broker behind this front end does not serve them",
    );
  }
  return api as TransactionApi;
}
