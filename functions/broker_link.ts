// How a functions process without a broker of its own (split mode, Deno Deploy) reaches one
// over HTTP: the SDK client, plus the operations views (cli/admin_http.ts, until the SDK
// carries them), the transaction calls (client/transactions.ts) and the QStash calls
// (/v1/qstash). Shared by the two entry files, which pick it like they pick the platform.
// Refusals come back as the broker's own BrokerError class: the resolver fails over to
// another broker itself (so no SDK retries), and the app renders that class.
import { BrokerError as SdkError, MqClient } from "../client/mod.ts";
import { TransactionClient, withTransactions } from "../client/transactions.ts";
import { AdminHttp } from "../cli/admin_http.ts";
import { remoteQstash } from "./qstash/remote.ts";
import { BrokerError, type ProblemJson } from "../runtime/protocol/errors.ts";

const asBrokerError = (e: { toProblem(): ProblemJson; status: number }) =>
  BrokerError.fromProblem(e.toProblem(), e.status);

/** The operations views (OpsApi) over the broker's own routes, on `client`. */
function withOps(client: MqClient, baseUrl: string, token: string | undefined) {
  const ops = new AdminHttp(baseUrl, token);
  const mapped = <T>(p: Promise<T>) =>
    p.catch((e) => {
      throw e instanceof SdkError ? asBrokerError(e) : e;
    });
  return Object.assign(client, {
    listGroups: () => mapped(ops.listGroups()),
    topicStats: (topic: string) => mapped(ops.topicStats(topic)),
    groupProgress: (group: string) => mapped(ops.groupProgress(group)),
    clusterView: () => mapped(ops.clusterView()),
  });
}

/** `connect` for KvRouteResolver and `qstash` for createApp, presenting `token` (an admin
 * key on the brokers). */
export function brokerLink(token: string | undefined) {
  return remoteQstash((baseUrl) => {
    const options = { baseUrl, token, retries: 0, mapError: asBrokerError };
    return withTransactions(
      withOps(new MqClient(options), baseUrl, token),
      new TransactionClient(options),
    );
  }, { token });
}
