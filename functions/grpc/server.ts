// The RocketMQ 5 gRPC front end (docs/grpc.md): apache.rocketmq.v2.MessagingService, a thin
// adapter over the core API like the HTTP app. What is here is the public port alone: the
// transport and the service load when the first gRPC connection arrives (grpc-js and the
// service definitions were ~85 ms of Deno's and ~150 ms of Bun's cold start and ~18 MiB of
// idle RSS: bench/README.md, "startup_bench"). Transports (grpcTransport): `lean`, our own
// HTTP/2 (h2/lean.ts), takes the accepted sockets (TLS done here); `grpc-js` (service.ts)
// takes them through its connection injector (TLS done there), except on Deno, whose
// node:http2 server needs the GOAWAY shield (goaway_shield.ts) in front of a loopback port.
import { readFileSync } from "node:fs";
import type net from "node:net";
import { nodeNet, nodeTls } from "../../runtime/protocol/node_builtins.ts";
import type { GrpcServerOptions, GrpcSocket } from "./deps.ts";
import { startGoawayShield } from "./goaway_shield.ts";
import type { GrpcService } from "./service.ts";

export type { GrpcServerOptions };

export interface GrpcServer {
  /** The bound port (the ephemeral one when grpcPort is 0). */
  port: number;
  /** Whether grpc-js has been started (a gRPC connection came). */
  readonly started: boolean;
  /** Ends Telemetry streams, lets calls in flight finish (grpcShutdownMs), then stops. */
  close(): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const s = options.settings;
  const tls = s.grpcTlsCertFile
    ? { cert: readFileSync(s.grpcTlsCertFile), key: readFileSync(s.grpcTlsKeyFile) }
    : undefined;
  // Deno's node:http2 server needs the GOAWAY shield; the lean transport reads GOAWAY itself.
  const loopback = options.goawayShield === true && s.grpcTransport !== "lean";
  let service: Promise<GrpcService> | undefined;
  let closing = false;
  const lean = s.grpcTransport === "lean";
  const start = () =>
    service ??= (lean
      ? import("./h2/lean.ts").then((m) =>
        m.startLeanService(options)
      )
      : import("./service.ts").then((m) =>
        m.startGrpcService(options, { loopback, tls: loopback ? undefined : tls })
      )).catch((err) => {
        options.log("error", "the gRPC service could not start", { err: String(err) });
        service = undefined; // the next connection tries again
        throw err;
      });
  let listener: { port: number; close(): Promise<void> };
  if (loopback) {
    listener = await startGoawayShield({
      host: options.host,
      port: s.grpcPort,
      target: async () => (await start()).loopbackPort!,
      tls,
    });
  } else {
    const sockets = new Set<GrpcSocket>();
    const accept = (socket: GrpcSocket) => {
      if (closing) return void socket.destroy();
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      // grpc-js's injector only ever gets node:net's sockets: options.listen serves lean alone.
      start().then((svc) => svc.inject(socket as net.Socket), () => socket.destroy());
    };
    const address = { hostname: options.host, port: s.grpcPort };
    // Lean without TLS: the platform's own listener (Bun.listen on Bun). The lean transport
    // reads decrypted bytes (TLS here); grpc-js's injector does TLS itself.
    const bound = lean && !tls && options.listen
      ? await options.listen(address, accept)
      : await bindNode(
        lean && tls
          ? nodeTls().createServer({ cert: tls.cert, key: tls.key, ALPNProtocols: ["h2"] }, accept)
          : nodeNet().createServer(accept),
        address,
      );
    listener = {
      port: bound.port,
      close: () => {
        for (const socket of sockets) socket.destroy();
        return bound.close();
      },
    };
  }
  return {
    port: listener.port,
    get started() {
      return service !== undefined;
    },
    close: async () => {
      closing = true;
      // grpc-js first (calls in flight finish), then the port and what is left on it.
      const svc = await service?.catch(() => undefined);
      await svc?.close();
      await listener.close();
    },
  };
}

/** `server` listening on `address`: its port, and a close that resolves once it stopped. */
function bindNode(
  server: net.Server,
  address: { hostname: string; port: number },
): Promise<{ port: number; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.hostname, () => {
      server.off("error", reject);
      resolve({
        port: (server.address() as net.AddressInfo).port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
