// The service definition and the handlers of every RPC (the RPC modules: route.ts
// (QueryRoute, QueryAssignment), send.ts (SendMessage, RecallMessage, EndTransaction),
// receive.ts, settle.ts (ack, invisible time, DLQ), telemetry.ts (Telemetry, Heartbeat,
// NotifyClientTermination), offsets.ts (GetOffset, UpdateOffset, QueryOffset, PullMessage)),
// shaped as grpc-js takes them; both transports serve them (service.ts, h2/lean.ts). An RPC
// without a handler (SyncLiteSubscription) gets UNIMPLEMENTED with its name.
import type * as grpc from "@grpc/grpc-js";
import { apiSource } from "../routes/api_source.ts";
import { GrpcAuth } from "./auth.ts";
import type { Req, Res } from "./calls.ts";
import type { GrpcServerOptions } from "./deps.ts";
import { offsetHandlers } from "./offsets.ts";
import { loadMessagingService } from "./proto.ts";
import { receiveHandlers } from "./receive.ts";
import { AutoRenew } from "./renew.ts";
import { Names } from "./resources.ts";
import { routeHandlers } from "./route.ts";
import { sendHandlers } from "./send.ts";
import { ClientSessions } from "./sessions.ts";
import { transactionHook } from "./transactions.ts";
import { settleHandlers } from "./settle.ts";
import { clientHandlers } from "./telemetry.ts";

/** The service definition and the handlers of every RPC, as grpc-js takes them. */
export async function messagingHandlers(options: GrpcServerOptions) {
  const s = options.settings;
  const open = new Set<grpc.ServerDuplexStream<Req, Res>>();
  const api = apiSource(options.broker);
  const renewals = new AutoRenew({
    api,
    log: options.log,
    nowMs: options.nowMs,
    leaseMs: s.grpcAutoRenewMs,
    maxMs: s.grpcAutoRenewMaxMs,
    heldMax: s.grpcAutoRenewHeldMax,
  });
  const deps = {
    api,
    renewals,
    auth: await GrpcAuth.create(options.apiKeys),
    names: new Names(),
    sessions: new ClientSessions(s.grpcClientsMax),
    log: options.log,
    brokerName: options.brokerName,
    storeHost: options.host,
    pullWaitMsMax: options.pullWaitMsMax,
    transactions: options.transactions ?? transactionHook(apiSource(options.broker), options.log),
    records: options.records,
    nowMs: options.nowMs,
    maxMessageSize: options.maxMessageSize,
  };
  const implementation = {
    ...routeHandlers(deps),
    ...sendHandlers(deps),
    ...receiveHandlers(deps),
    ...settleHandlers(deps),
    ...clientHandlers(deps, open),
    ...offsetHandlers(deps),
  } as grpc.UntypedServiceImplementation;
  return { service: loadMessagingService(), implementation, open, renewals };
}
