// Typed errors from the broker's application/problem+json answers (RFC 9457). `code` is
// stable (the broker's catalogue, runtime/protocol/errors.ts; tests/sdk_types_test.ts keeps
// the two lists equal), so callers switch on it rather than on messages.

/** Every code the broker answers with. */
export const PROBLEM_CODES = [
  "BAD_REQUEST",
  "INVALID_JSON",
  "INVALID_NAME",
  "INVALID_HEADER",
  "INVALID_PROPERTY",
  "INVALID_PARAMETER",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "TOPIC_PERMISSION_DENIED",
  "SYSTEM_TOPIC",
  "TOPIC_NOT_FOUND",
  "GROUP_NOT_FOUND",
  "QUEUE_NOT_FOUND",
  "SUBSCRIPTION_NOT_FOUND",
  "WEBHOOK_URL_REFUSED",
  "SCHEDULE_NOT_FOUND",
  "SCHEDULE_EXISTS",
  "RECEIPT_HANDLE_UNKNOWN",
  "RECEIPT_HANDLE_EXPIRED",
  "RECEIPT_HANDLE_SETTLED",
  "TRANSACTION_NOT_FOUND",
  "TRANSACTION_DECIDED",
  "MESSAGE_NOT_FOUND",
  "ROUTE_NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "REQUEST_TIMEOUT",
  "BODY_INCOMPLETE",
  "IDEMPOTENCY_CONFLICT",
  "ALREADY_DELIVERED",
  "IDEMPOTENCY_IN_FLIGHT",
  "OFFSET_OUT_OF_RANGE",
  "PAYLOAD_TOO_LARGE",
  "MESSAGE_TOO_LARGE",
  "PROPERTIES_TOO_LARGE",
  "TOO_MANY_ITEMS",
  "CLIENT_NOT_MEMBER",
  "TOO_MANY_TOPICS",
  "TOO_MANY_GROUPS",
  "UNSUPPORTED_MEDIA_TYPE",
  "TOO_MANY_WAITING",
  "BROKER_GROUP_NOT_FOUND",
  "BROKER_GROUP_NOT_DRAINED",
  "TOPIC_ROUTE_CONFLICT",
  "INTERNAL",
  "STORE_NOT_WRITABLE",
  "BROKER_UNAVAILABLE",
  "CLUSTER_ROUTER_REQUIRED",
  "NOT_LEADER",
  "RECOVERING",
  "FLUSH_TIMEOUT",
  "REPLICATION_TIMEOUT",
  "REPLICAS_NOT_AVAILABLE",
] as const;

export type ProblemCode = typeof PROBLEM_CODES[number];

/** The body of a refusal. */
export interface ProblemJson {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  [extension: string]: unknown;
}

const KNOWN = new Set<string>(PROBLEM_CODES);

/** A refusal by the broker (or no broker reachable: BROKER_UNAVAILABLE, status 503). */
export class BrokerError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  /** The problem type URI, e.g. "/problems/topic-not-found". */
  readonly type: string;
  readonly title: string;
  /** The problem's other members (e.g. `index` of a batch item). */
  readonly extensions: Record<string, unknown>;
  /** What a 429/503 answer's Retry-After asked for, ms. */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: ProblemCode,
    detail: string,
    init: {
      status?: number;
      type?: string;
      title?: string;
      extensions?: Record<string, unknown>;
      retryAfterMs?: number;
      cause?: unknown;
    } = {},
  ) {
    super(detail, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "BrokerError";
    this.code = code;
    this.status = init.status ?? (code === "BROKER_UNAVAILABLE" ? 503 : 400);
    this.type = init.type ?? "about:blank";
    this.title = init.title ?? code;
    this.extensions = init.extensions ?? {};
    this.retryAfterMs = init.retryAfterMs;
  }

  /** The problem+json this error stands for. */
  toProblem(): ProblemJson {
    return {
      ...this.extensions,
      type: this.type,
      title: this.title,
      status: this.status,
      detail: this.message,
      code: this.code,
    };
  }

  /** The error a problem+json body (or any JSON body) of an answer with `status` means. */
  static fromProblem(
    problem: Partial<ProblemJson>,
    status: number,
    retryAfterMs?: number,
  ): BrokerError {
    const code = typeof problem.code === "string" && KNOWN.has(problem.code)
      ? problem.code
      : status >= 500
      ? "BROKER_UNAVAILABLE"
      : "BAD_REQUEST";
    const { type, title, status: _s, detail, code: _c, ...extensions } = problem;
    return new BrokerError(
      code,
      typeof detail === "string" ? detail : `Broker answered ${status}`,
      {
        status,
        type: typeof type === "string" ? type : undefined,
        title: typeof title === "string" ? title : undefined,
        extensions,
        retryAfterMs,
      },
    );
  }
}
