// The lean gRPC transport (MQ_GRPC_TRANSPORT=lean; docs/grpc.md): our own HTTP/2
// connections (conn.ts) in front of the same handlers grpc-js serves (service.ts), with
// call objects shaped as grpc-js's (call.ts). Unary and server-streaming calls get their
// request whole; a bidi call (Telemetry) gets each message as it comes.
import type { Buffer } from "node:buffer";
import type { Duplex } from "node:stream";
import type * as grpc from "@grpc/grpc-js";
import type { GrpcServerOptions } from "../deps.ts";
import { messagingHandlers } from "../handlers.ts";
import type { GrpcService } from "../service.ts";
import { H2Call, MessageReader } from "./call.ts";
import { H2Connection } from "./conn.ts";
import type { H2Stream } from "./stream.ts";
import { GrpcStatus } from "../status.ts";

/** After the last call of a connection is answered at shutdown, or after the connection is
 * ended (idle, a protocol error), how long its client gets to close it (they do at once after
 * GOAWAY) before it is cut off. */
const CLOSE_GRACE_MS = 250;

type Def = grpc.MethodDefinition<unknown, unknown>;
// deno-lint-ignore no-explicit-any -- grpc-js's handler types, called with our call objects
type Handler = (call: any, callback?: any) => void;

export async function startLeanService(options: GrpcServerOptions): Promise<GrpcService> {
  const s = options.settings;
  const { service, implementation, open, renewals } = await messagingHandlers(options);
  const methods = new Map<string, { def: Def; impl: Handler }>();
  for (const [name, def] of Object.entries(service)) {
    const impl = implementation[def.originalName ?? name] ?? implementation[name];
    if (impl) methods.set(def.path, { def: def as Def, impl: impl as Handler });
  }
  const connections = new Set<H2Connection>();

  const onStream = (stream: H2Stream) => {
    const m = methods.get(stream.headers.get(":path") ?? "");
    if (stream.headers.get(":method") !== "POST" || !m) {
      stream.finish(GrpcStatus.UNIMPLEMENTED, `Not served here: ${stream.headers.get(":path")}`);
      return;
    }
    const { def, impl } = m;
    const decode = (bytes: Buffer): unknown => def.requestDeserialize(bytes);
    const reader = new MessageReader(s.grpcRequestBytesMax, stream.inbound);
    const messages: Buffer[] = [];
    if (def.requestStream) {
      // Bidi (Telemetry): the handler first, then each message as it arrives.
      const call = new H2Call(stream, def.responseSerialize as never, options.nowMs());
      call.on("close", () => reader.release());
      impl(call);
      stream.ondata = (chunk) => {
        const bad = reader.push(chunk, messages);
        if (bad) return call.fail(bad.code, bad.details);
        for (const msg of messages.splice(0)) {
          try {
            call.emit("data", decode(msg));
          } catch (err) {
            return call.fail(
              GrpcStatus.INTERNAL,
              `Cannot parse a message: ${(err as Error).message}`,
            );
          }
        }
        reader.settle();
      };
      stream.onend = () => call.emit("end");
      return;
    }
    let refused = false;
    stream.onreset = () => reader.release();
    stream.ondata = (chunk) => {
      if (refused) return;
      // Refused at once (the rest of an oversized message is not waited for); the
      // connection then resets the stream with NO_ERROR so the client stops sending.
      const bad = reader.push(chunk, messages);
      if (bad) {
        refused = true;
        stream.finish(bad.code, bad.details);
      }
    };
    stream.onend = () => {
      reader.release(); // the messages are decoded below or refused
      if (refused) return;
      if (messages.length !== 1 || reader.partial) {
        return stream.finish(GrpcStatus.INTERNAL, "Expected exactly one request message");
      }
      let request: unknown;
      try {
        request = decode(messages[0]);
      } catch (err) {
        return stream.finish(
          GrpcStatus.INTERNAL,
          `Cannot parse the request: ${(err as Error).message}`,
        );
      }
      if (def.responseStream) {
        const call = new H2Call(stream, def.responseSerialize as never, options.nowMs());
        call.request = request;
        return impl(call);
      }
      // Unary: the handlers read only the request and the metadata; no call object.
      const headers = stream.headers;
      const call = {
        request,
        metadata: { get: (k: string) => (headers.has(k) ? [headers.get(k)!] : []) },
      };
      stream.busy = true;
      impl(call, (err: grpc.ServiceError | null, res: unknown) => {
        stream.release();
        if (err) {
          return stream.finish(err.code ?? GrpcStatus.UNKNOWN, err.details ?? err.message ?? "");
        }
        let bytes: Uint8Array;
        try {
          bytes = def.responseSerialize(res);
        } catch (e) {
          return stream.finish(
            GrpcStatus.INTERNAL,
            `Cannot encode the response: ${(e as Error).message}`,
          );
        }
        stream.message(bytes);
        stream.finish(0);
      });
    };
  };

  return {
    inject: (socket: Duplex) => {
      (socket as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
      const conn = new H2Connection(socket, {
        maxConcurrentStreams: s.grpcH2StreamsMax,
        windowBytes: s.grpcH2WindowBytes,
        maxFrameBytes: s.grpcH2FrameBytesMax,
        headerListBytesMax: s.grpcH2HeaderBytesMax,
        inboundBytesMax: s.grpcH2InboundBytesMax,
        writeBufferBytes: s.grpcH2WriteBufferBytes,
        idleMs: s.grpcH2IdleMs,
        keepaliveMs: s.grpcH2KeepaliveMs,
        keepaliveTimeoutMs: s.grpcH2KeepaliveTimeoutMs,
        closeGraceMs: CLOSE_GRACE_MS,
        pingIntervalMinMs: s.grpcH2PingIntervalMinMs,
        pingStrikesMax: s.grpcH2PingStrikesMax,
      }, onStream);
      connections.add(conn);
      socket.on("data", (chunk: Buffer) => conn.receive(chunk));
      const end = () => {
        if (!connections.delete(conn)) return;
        conn.closed();
        socket.destroy();
      };
      socket.on("close", end).on("error", end).on("end", end);
    },
    close: async () => {
      // Telemetry streams end first (their clients get an OK status); every connection is
      // told GOAWAY, and calls in flight get grpcShutdownMs.
      for (const call of open) if (!call.writableEnded) call.end();
      renewals.close();
      for (const c of connections) c.goaway();
      const sleep = () => new Promise((r) => setTimeout(r, 20));
      const until = Date.now() + s.grpcShutdownMs;
      while (Date.now() < until && [...connections].some((c) => c.openStreams > 0)) await sleep();
      // Clients close a connection once GOAWAY came and their calls are answered; a short
      // grace for that, so none misses its last reply, then what is left is ended.
      const grace = Math.min(until, Date.now() + CLOSE_GRACE_MS);
      while (Date.now() < grace && connections.size > 0) await sleep();
      for (const c of connections) c.terminate();
    },
  };
}
