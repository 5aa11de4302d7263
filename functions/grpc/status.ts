// Status mapping (docs/grpc.md, "Status codes"): our BrokerError catalogue to RocketMQ 5's
// `Code` enum, carried in a `Status` inside an OK gRPC response as the proxy does
// (reference/rocketmq-grpc.md §1, §7). Refused credentials are the one exception: they end
// the call with the gRPC status UNAUTHENTICATED or PERMISSION_DENIED (GrpcRefusal).
import { BrokerError, type ProblemCode } from "../../runtime/protocol/errors.ts";

/** gRPC status codes (the protocol's; grpc-js's `status` enum has the same values). */
export const GrpcStatus = {
  OK: 0,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAUTHENTICATED: 16,
} as const;

/** apache.rocketmq.v2.Code values used here. */
export const Code = {
  OK: 20000,
  MULTIPLE_RESULTS: 30000,
  BAD_REQUEST: 40000,
  ILLEGAL_TOPIC: 40002,
  ILLEGAL_CONSUMER_GROUP: 40003,
  ILLEGAL_MESSAGE_TAG: 40004,
  ILLEGAL_MESSAGE_PROPERTY_KEY: 40007,
  INVALID_TRANSACTION_ID: 40008,
  ILLEGAL_MESSAGE_ID: 40009,
  ILLEGAL_FILTER_EXPRESSION: 40010,
  ILLEGAL_INVISIBLE_TIME: 40011,
  ILLEGAL_DELIVERY_TIME: 40012,
  INVALID_RECEIPT_HANDLE: 40013,
  UNRECOGNIZED_CLIENT_TYPE: 40015,
  MESSAGE_CORRUPTED: 40016,
  CLIENT_ID_REQUIRED: 40017,
  ILLEGAL_OFFSET: 40019,
  UNAUTHORIZED: 40100,
  FORBIDDEN: 40300,
  NOT_FOUND: 40400,
  MESSAGE_NOT_FOUND: 40401,
  TOPIC_NOT_FOUND: 40402,
  CONSUMER_GROUP_NOT_FOUND: 40403,
  OFFSET_NOT_FOUND: 40404,
  REQUEST_TIMEOUT: 40800,
  PAYLOAD_TOO_LARGE: 41300,
  MESSAGE_BODY_TOO_LARGE: 41301,
  MESSAGE_BODY_EMPTY: 41302,
  TOO_MANY_REQUESTS: 42900,
  MESSAGE_PROPERTIES_TOO_LARGE: 43101,
  INTERNAL_SERVER_ERROR: 50001,
  HA_NOT_AVAILABLE: 50002,
  NOT_IMPLEMENTED: 50100,
  PROXY_TIMEOUT: 50400,
  MASTER_PERSISTENCE_TIMEOUT: 50401,
  SLAVE_PERSISTENCE_TIMEOUT: 50402,
  UNSUPPORTED: 50500,
} as const;

export interface Status {
  code: number;
  message: string;
}

export const OK: Status = { code: Code.OK, message: "OK" };

/** Our catalogue code → Code. Anything not listed: the HTTP status's family. */
const BY_PROBLEM: Partial<Record<ProblemCode, number>> = {
  INVALID_NAME: Code.ILLEGAL_TOPIC,
  INVALID_PROPERTY: Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
  UNAUTHORIZED: Code.UNAUTHORIZED,
  FORBIDDEN: Code.FORBIDDEN,
  TOPIC_PERMISSION_DENIED: Code.FORBIDDEN,
  SYSTEM_TOPIC: Code.ILLEGAL_TOPIC,
  TOPIC_NOT_FOUND: Code.TOPIC_NOT_FOUND,
  GROUP_NOT_FOUND: Code.CONSUMER_GROUP_NOT_FOUND,
  RECEIPT_HANDLE_UNKNOWN: Code.INVALID_RECEIPT_HANDLE,
  RECEIPT_HANDLE_EXPIRED: Code.INVALID_RECEIPT_HANDLE,
  RECEIPT_HANDLE_SETTLED: Code.INVALID_RECEIPT_HANDLE,
  MESSAGE_NOT_FOUND: Code.MESSAGE_NOT_FOUND,
  OFFSET_OUT_OF_RANGE: Code.ILLEGAL_OFFSET,
  PAYLOAD_TOO_LARGE: Code.PAYLOAD_TOO_LARGE,
  MESSAGE_TOO_LARGE: Code.MESSAGE_BODY_TOO_LARGE,
  PROPERTIES_TOO_LARGE: Code.MESSAGE_PROPERTIES_TOO_LARGE,
  TOO_MANY_WAITING: Code.TOO_MANY_REQUESTS,
  FLUSH_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
  REPLICATION_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
  REPLICAS_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
  REQUEST_TIMEOUT: Code.REQUEST_TIMEOUT,
};

const BY_HTTP: Record<number, number> = {
  400: Code.BAD_REQUEST,
  401: Code.UNAUTHORIZED,
  403: Code.FORBIDDEN,
  404: Code.NOT_FOUND,
  408: Code.REQUEST_TIMEOUT,
  413: Code.PAYLOAD_TOO_LARGE,
  429: Code.TOO_MANY_REQUESTS,
  504: Code.PROXY_TIMEOUT,
};

/** A refusal as a Status; an unexpected error is logged by the caller and hidden. */
export function statusOf(err: unknown): Status {
  if (err instanceof BrokerError) {
    const code = BY_PROBLEM[err.code] ?? BY_HTTP[err.status] ??
      (err.status >= 500 ? Code.INTERNAL_SERVER_ERROR : Code.BAD_REQUEST);
    return { code, message: err.message };
  }
  return { code: Code.INTERNAL_SERVER_ERROR, message: "Internal error; the broker log has it" };
}

export function status(code: number, message: string): Status {
  return { code, message };
}

/** Ends a call with a gRPC status (not a Code): refused credentials, a malformed stream. */
export class GrpcRefusal extends Error {
  constructor(readonly grpcCode: number, message: string) {
    super(message);
  }

  /** UNAUTHORIZED → UNAUTHENTICATED, FORBIDDEN → PERMISSION_DENIED. */
  static from(err: BrokerError): GrpcRefusal {
    return new GrpcRefusal(
      err.code === "UNAUTHORIZED" ? GrpcStatus.UNAUTHENTICATED : GrpcStatus.PERMISSION_DENIED,
      err.message,
    );
  }
}

export function isAuthRefusal(err: unknown): err is BrokerError {
  return err instanceof BrokerError && (err.code === "UNAUTHORIZED" || err.code === "FORBIDDEN");
}
