// The grpc-js half of the gRPC front end (server.ts starts it on the first connection):
// apache.rocketmq.v2.MessagingService with the RPC modules' handlers. The RPC modules:
// route.ts (QueryRoute, QueryAssignment), send.ts (SendMessage, RecallMessage,
// EndTransaction), receive.ts, settle.ts (ack, invisible time, DLQ), telemetry.ts
// (Telemetry, Heartbeat, NotifyClientTermination), offsets.ts (GetOffset, UpdateOffset,
// QueryOffset, PullMessage). An RPC not listed (SyncLiteSubscription) gets grpc-js's
// UNIMPLEMENTED status with its name.
import { Buffer } from "node:buffer";
import type { Duplex } from "node:stream";
import * as grpc from "@grpc/grpc-js";
import { apiSource } from "../routes/route.ts";
import { GrpcAuth } from "./auth.ts";
import type { Req, Res } from "./calls.ts";
import { offsetHandlers } from "./offsets.ts";
import { loadMessagingService } from "./proto.ts";
import { receiveHandlers } from "./receive.ts";
import { AutoRenew } from "./renew.ts";
import { Names } from "./resources.ts";
import { routeHandlers } from "./route.ts";
import { sendHandlers } from "./send.ts";
import type { GrpcServerOptions } from "./deps.ts";
import { ClientSessions } from "./sessions.ts";
import { transactionHook } from "./transactions.ts";
import { settleHandlers } from "./settle.ts";
import { clientHandlers } from "./telemetry.ts";

export interface GrpcService {
  /** Hands a client connection (raw TCP; TLS is done here when configured) to grpc-js. */
  inject(socket: Duplex): void;
  /** The loopback port grpc-js listens on (h2c), when started with `loopback`. */
  loopbackPort?: number;
  /** Ends Telemetry streams, lets calls in flight finish (grpcShutdownMs), then stops. */
  close(): Promise<void>;
}

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

export async function startGrpcService(
  options: GrpcServerOptions,
  how: { loopback: boolean; tls?: { cert: Uint8Array; key: Uint8Array } },
): Promise<GrpcService> {
  const s = options.settings;
  const { service, implementation, open, renewals } = await messagingHandlers(options);
  const server = new grpc.Server({
    "grpc.max_receive_message_length": s.grpcRequestBytesMax,
    "grpc.max_send_message_length": -1,
    // No channelz service is exposed: its per-call and per-connection trackers are cost only.
    "grpc.enable_channelz": 0,
  });
  server.addService(service, implementation);
  let loopbackPort: number | undefined;
  let injector: grpc.ConnectionInjector | undefined;
  if (how.loopback) {
    loopbackPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(
        "127.0.0.1:0",
        grpc.ServerCredentials.createInsecure(),
        (err, bound) => err ? reject(err) : resolve(bound),
      )
    );
  } else {
    injector = server.createConnectionInjector(
      how.tls
        ? grpc.ServerCredentials.createSsl(null, [{
          cert_chain: Buffer.from(how.tls.cert),
          private_key: Buffer.from(how.tls.key),
        }], false)
        : grpc.ServerCredentials.createInsecure(),
    );
  }
  return {
    loopbackPort,
    inject: (socket) => {
      if (!injector) throw new Error("grpc-js listens on loopback: connect to loopbackPort");
      injector.injectConnection(socket);
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Telemetry streams end first (their clients get an OK status); then calls in
        // flight get grpcShutdownMs.
        for (const call of open) if (!call.writableEnded) call.end();
        renewals.close();
        let finished = false;
        const done = () => {
          if (finished) return;
          finished = true;
          clearTimeout(force);
          resolve();
        };
        const force = setTimeout(() => {
          server.forceShutdown();
          done();
        }, s.grpcShutdownMs);
        server.tryShutdown(done);
      }),
  };
}
