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
import type { GrpcDeps, Log, TransactionHook } from "./deps.ts";
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
import { type Shield, startGoawayShield } from "./goaway_shield.ts";

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
  /** The in-process core's records, when the broker runs here (QueryOffset by timestamp). */
  records?: GrpcDeps["records"];
  /** Put the GOAWAY shield (goaway_shield.ts) in front: for Deno, whose node:http2 server
   * aborts on a client's GOAWAY. */
  goawayShield?: boolean;
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
  const server = new grpc.Server({
    "grpc.max_receive_message_length": s.grpcRequestBytesMax,
    "grpc.max_send_message_length": -1,
    // No channelz service is exposed: its per-call and per-connection trackers are cost only.
    "grpc.enable_channelz": 0,
  });
  server.addService(loadMessagingService(), {
    ...routeHandlers(deps),
    ...sendHandlers(deps),
    ...receiveHandlers(deps),
    ...settleHandlers(deps),
    ...clientHandlers(deps, open),
    ...offsetHandlers(deps),
  } as grpc.UntypedServiceImplementation);
  const tlsFiles = s.grpcTlsCertFile
    ? { cert: readFileSync(s.grpcTlsCertFile), key: readFileSync(s.grpcTlsKeyFile) }
    : undefined;
  const bind = (address: string, credentials: grpc.ServerCredentials) =>
    new Promise<number>((resolve, reject) =>
      server.bindAsync(address, credentials, (err, bound) => err ? reject(err) : resolve(bound))
    );
  let shield: Shield | undefined;
  let port: number;
  if (options.goawayShield) {
    // grpc-js on a loopback port; the shield takes the public port (and TLS).
    const inner = await bind("127.0.0.1:0", grpc.ServerCredentials.createInsecure());
    shield = await startGoawayShield({
      host: options.host,
      port: s.grpcPort,
      target: inner,
      tls: tlsFiles,
    });
    port = shield.port;
  } else {
    port = await bind(
      `${options.host}:${s.grpcPort}`,
      tlsFiles
        ? grpc.ServerCredentials.createSsl(null, [{
          cert_chain: tlsFiles.cert,
          private_key: tlsFiles.key,
        }], false)
        : grpc.ServerCredentials.createInsecure(),
    );
  }
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Telemetry streams end first (their clients get an OK status); then calls in
        // flight get grpcShutdownMs; the shield's connections go last.
        for (const call of open) if (!call.writableEnded) call.end();
        renewals.close();
        let finished = false;
        const done = () => {
          if (finished) return;
          finished = true;
          clearTimeout(force);
          void (shield?.close() ?? Promise.resolve()).then(() => resolve());
        };
        const force = setTimeout(() => {
          server.forceShutdown();
          done();
        }, s.grpcShutdownMs);
        server.tryShutdown(done);
      }),
  };
}
