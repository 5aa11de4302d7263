// What every RPC module of the gRPC front end is given (server.ts builds it).
import type { BrokerClient, BrokerResolver, RecordApi } from "../../runtime/protocol/core_api.ts";
import type { GrpcSettings } from "../../runtime/protocol/grpc_settings.ts";
import type { TransactionCheck } from "../../runtime/protocol/transaction_types.ts";
import type { ApiKeyConfig, ProduceMessage } from "../../runtime/protocol/types.ts";
import type { ApiSource } from "../routes/route.ts";
import type { GrpcAuth } from "./auth.ts";
import type { AutoRenew } from "./renew.ts";
import type { Names } from "./resources.ts";
import type { ClientSessions } from "./sessions.ts";
import type { Socketish } from "./h2/writer.ts";

export type Log = (
  level: "debug" | "info" | "warn" | "error",
  msg: string,
  fields?: Record<string, unknown>,
) => void;

/** Transactions (functions/grpc/transactions.ts builds it over the core's TransactionApi). */
export interface TransactionHook {
  /** A half message; the producer group is the topic (the proxy's producer registration). */
  begin(
    topic: string,
    message: ProduceMessage,
  ): Promise<{ messageId: string; transactionId: string }>;
  end(request: {
    topic: string;
    messageId: string;
    transactionId: string;
    resolution: "COMMIT" | "ROLLBACK" | "UNKNOWN";
    fromCheck: boolean;
  }): Promise<void>;
  /** A producer session publishing `topics` takes their checks; returns the unregister. */
  checksFor(
    topics: string[],
    send: (check: TransactionCheck) => void,
  ): Promise<() => void>;
}

export interface GrpcDeps {
  api: ApiSource<BrokerClient>;
  auth: GrpcAuth;
  names: Names;
  sessions: ClientSessions;
  log: Log;
  /** Shown as the broker of every route queue, and as born/store host of messages. */
  brokerName: string;
  storeHost: string;
  /** The longest long poll (pullWaitMsMax). */
  pullWaitMsMax: number;
  transactions?: TransactionHook;
  /** Renews auto_renew receives (renew.ts). */
  renewals?: AutoRenew;
  /** The in-process core's records (QueryOffset by timestamp); undefined in split mode or
   * while the broker recovers. */
  records?: () => Pick<RecordApi, "offsetByTime"> | undefined;
  nowMs: () => number;
  /** Largest message body (maxMessageSize), told to producers in their settings. */
  maxMessageSize: number;
}

/** A client connection as the lean transport reads it: node:net's Socket, or the platform's
 * own (Bun.listen's, runtime/platform/bun_tcp.ts). */
export interface GrpcSocket extends Socketish {
  // deno-lint-ignore no-explicit-any
  on(event: string, listener: (...args: any[]) => void): unknown;
  setNoDelay?(noDelay?: boolean): unknown;
  destroy(): unknown;
}

/** What the front end is started with (server.ts; service.ts builds GrpcDeps from it). */
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
  /** The platform's own TCP listener, used for the lean transport without TLS (on Bun, its
   * sockets: the port then never loads node:net); node:net's server otherwise. */
  listen?: (
    address: { hostname: string; port: number },
    onSocket: (socket: GrpcSocket) => void,
  ) => Promise<{ port: number; close(): Promise<void> }>;
}
