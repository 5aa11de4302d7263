// The RocketMQ 5 gRPC front end (docs/grpc.md): apache.rocketmq.v2.MessagingService on
// @grpc/grpc-js, a thin adapter over the core API like the HTTP app. The RPC modules:
// route.ts (QueryRoute, QueryAssignment), send.ts (SendMessage, RecallMessage,
// EndTransaction), receive.ts, settle.ts (ack, invisible time, DLQ), telemetry.ts
// (Telemetry, Heartbeat, NotifyClientTermination), offsets.ts (GetOffset, UpdateOffset,
// QueryOffset, PullMessage). An RPC not listed (SyncLiteSubscription) gets grpc-js's
// UNIMPLEMENTED status with its name.
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import type { BrokerResolver } from "../../runtime/protocol/core_api.ts";
import type { GrpcSettings } from "../../runtime/protocol/grpc_settings.ts";
import type { ApiKeyConfig } from "../../runtime/protocol/types.ts";
import { apiSource } from "../routes/route.ts";
import { GrpcAuth } from "./auth.ts";
import type { Req, Res } from "./calls.ts";
import type { Log, TransactionHook } from "./deps.ts";
import { offsetHandlers } from "./offsets.ts";
import { loadMessagingService } from "./proto.ts";
import { receiveHandlers } from "./receive.ts";
import { Names } from "./resources.ts";
import { routeHandlers } from "./route.ts";
import { sendHandlers } from "./send.ts";
import { ClientSessions } from "./sessions.ts";
import { settleHandlers } from "./settle.ts";
import { clientHandlers } from "./telemetry.ts";

export interface GrpcServerOptions {
  broker: BrokerResolver;
  apiKeys: ApiKeyConfig[];
  settings: GrpcSettings;
  host: string;
  log: Log;
  brokerName: string;
  maxMessageSize: number;
  pullWaitMsMax: number;
  nowMs: () => number;
  transactions?: TransactionHook;
}

export interface GrpcServer {
  /** The bound port (the ephemeral one when grpcPort is 0). */
  port: number;
  /** Ends Telemetry streams, lets calls in flight finish (grpcShutdownMs), then stops. */
  close(): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const s = options.settings;
  const open = new Set<grpc.ServerDuplexStream<Req, Res>>();
  const deps = {
    api: apiSource(options.broker),
    auth: await GrpcAuth.create(options.apiKeys),
    names: new Names(),
    sessions: new ClientSessions(s.grpcClientsMax),
    log: options.log,
    brokerName: options.brokerName,
    storeHost: options.host,
    pullWaitMsMax: options.pullWaitMsMax,
    transactions: options.transactions,
    nowMs: options.nowMs,
    maxMessageSize: options.maxMessageSize,
  };
  const server = new grpc.Server({
    "grpc.max_receive_message_length": s.grpcRequestBytesMax,
    "grpc.max_send_message_length": -1,
  });
  server.addService(loadMessagingService(), {
    ...routeHandlers(deps),
    ...sendHandlers(deps),
    ...receiveHandlers(deps),
    ...settleHandlers(deps),
    ...clientHandlers(deps, open),
    ...offsetHandlers(deps),
  } as grpc.UntypedServiceImplementation);
  const credentials = s.grpcTlsCertFile
    ? grpc.ServerCredentials.createSsl(null, [{
      cert_chain: readFileSync(s.grpcTlsCertFile),
      private_key: readFileSync(s.grpcTlsKeyFile),
    }], false)
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${options.host}:${s.grpcPort}`,
      credentials,
      (err, bound) => err ? reject(err) : resolve(bound),
    )
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const call of open) if (!call.writableEnded) call.end();
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, s.grpcShutdownMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
