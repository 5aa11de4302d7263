// The grpc-js transport (MQ_GRPC_TRANSPORT=grpc-js; server.ts starts it on the first
// connection): grpc-js's own server on the runtime's node:http2, serving handlers.ts.
import { Buffer } from "node:buffer";
import type { Duplex } from "node:stream";
import * as grpc from "@grpc/grpc-js";
import type { GrpcServerOptions } from "./deps.ts";
import { messagingHandlers } from "./handlers.ts";

export interface GrpcService {
  /** Hands a client connection (raw TCP; TLS is done here when configured) to grpc-js. */
  inject(socket: Duplex): void;
  /** The loopback port grpc-js listens on (h2c), when started with `loopback`. */
  loopbackPort?: number;
  /** Ends Telemetry streams, lets calls in flight finish (grpcShutdownMs), then stops. */
  close(): Promise<void>;
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
