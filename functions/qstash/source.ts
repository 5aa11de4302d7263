// The QStash front end's QstashApi, found per request like every other route's core API:
// each call asks the resolver for the broker (in a replicated group the current master,
// in split mode one from the KV route table), takes its QStash calls, and tells the
// resolver when the call failed so a stale route is dropped.
import type { BrokerClient, QstashApi, QstashOf } from "../../runtime/protocol/core_api.ts";
import type { ApiSource } from "../routes/route.ts";

export function qstashPerRequest(api: ApiSource<BrokerClient>, of: QstashOf): QstashApi {
  return {
    qstashSigningKeys: () => api.call((b) => of(b).qstashSigningKeys()),
    rotateQstashSigningKeys: () => api.call((b) => of(b).rotateQstashSigningKeys()),
    setQstashSigningKeys: (keys) => api.call((b) => of(b).setQstashSigningKeys(keys)),
    checkDestination: (url) => api.call((b) => of(b).checkDestination(url)),
    qstashSettings: () => api.call((b) => of(b).qstashSettings()),
    listDeadLetters: (group, max) => api.call((b) => of(b).listDeadLetters(group, max)),
    retryDeadLetters: (group, ids) => api.call((b) => of(b).retryDeadLetters(group, ids)),
    deleteDeadLetters: (group, ids) => api.call((b) => of(b).deleteDeadLetters(group, ids)),
    qstashSchedule: (id) => api.call((b) => of(b).qstashSchedule(id)),
  };
}
