// Call wrappers: authenticate from metadata, run the adapter, and answer. Refusals of
// business rules become a `Status` in an OK response (as RocketMQ's proxy answers);
// refused credentials end the call with UNAUTHENTICATED / PERMISSION_DENIED; unexpected
// errors are logged and answered INTERNAL_SERVER_ERROR. Nothing here throws out of a
// handler: grpc-js keeps serving other calls whatever one does.
import type * as grpc from "@grpc/grpc-js";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { Caller } from "./auth.ts";
import type { GrpcDeps } from "./deps.ts";
import { GrpcRefusal, isAuthRefusal, type Status, statusOf } from "./status.ts";

// deno-lint-ignore no-explicit-any -- messages are the proto loader's plain objects
export type Req = any;
export type Res = Record<string, unknown>;
/** A streamed response: an object, or its bytes already encoded (delivered_wire.ts). */
export type StreamRes = Res | Uint8Array;

export type UnaryHandler = (req: Req, caller: Caller) => Promise<Res>;
export type StreamHandler = (
  req: Req,
  caller: Caller,
  call: grpc.ServerWritableStream<Req, StreamRes>,
) => Promise<void>;

/** The gRPC status a refusal ends a call with, or undefined for a business refusal. */
export function refusalOf(err: unknown): grpc.StatusObject | undefined {
  const r = err instanceof GrpcRefusal ? err : isAuthRefusal(err) ? GrpcRefusal.from(err) : null;
  return r ? { code: r.grpcCode, details: r.message, metadata: null as never } : undefined;
}

export function answerStatus(deps: GrpcDeps, rpc: string, err: unknown): Status {
  if (!(err instanceof BrokerError)) {
    deps.log("error", "unhandled error in a gRPC call", {
      rpc,
      err: String(err),
      stack: (err as Error)?.stack,
    });
  }
  return statusOf(err);
}

export function unary(
  deps: GrpcDeps,
  rpc: string,
  handler: UnaryHandler,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    deps.auth.caller(call.metadata)
      .then((caller) => handler(call.request ?? {}, caller))
      .then(
        (res) => callback(null, res),
        (err) => {
          const refusal = refusalOf(err);
          if (refusal) callback(refusal);
          else callback(null, { status: answerStatus(deps, rpc, err) });
        },
      );
  };
}

export function serverStream(
  deps: GrpcDeps,
  rpc: string,
  handler: StreamHandler,
): grpc.handleServerStreamingCall<Req, StreamRes> {
  return (call) => {
    deps.auth.caller(call.metadata)
      .then((caller) => handler(call.request ?? {}, caller, call))
      .then(
        () => call.end(),
        (err) => {
          const refusal = refusalOf(err);
          if (refusal) call.emit("error", refusal);
          else {
            if (!call.cancelled) call.write({ status: answerStatus(deps, rpc, err) });
            call.end();
          }
        },
      );
  };
}

/** An AbortSignal that fires when the client cancels the call or its deadline passes. */
export function cancelSignal(call: grpc.ServerWritableStream<Req, StreamRes>): AbortSignal {
  const ac = new AbortController();
  if (call.cancelled) ac.abort();
  else call.once("cancelled", () => ac.abort());
  return ac.signal;
}

/** Milliseconds left before the call's deadline (Infinity when it has none). */
export function msLeft(call: grpc.ServerWritableStream<Req, StreamRes>, nowMs: number): number {
  const d = call.getDeadline();
  const at = d instanceof Date ? d.getTime() : Number(d);
  return Number.isFinite(at) ? at - nowMs : Infinity;
}
