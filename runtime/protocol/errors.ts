// One catalogue of refusals. functions/ renders a BrokerError as
// application/problem+json (RFC 9457); its `type` is fixed forever by its code, so
// clients may switch on it. Expected outcomes ("no message yet") are values, not errors.

export const PROBLEMS = {
  BAD_REQUEST: { status: 400, type: "/problems/bad-request", title: "Bad request" },
  INVALID_JSON: { status: 400, type: "/problems/invalid-json", title: "Malformed JSON body" },
  INVALID_NAME: {
    status: 400,
    type: "/problems/invalid-name",
    title: "Invalid topic or group name",
  },
  INVALID_HEADER: { status: 400, type: "/problems/invalid-header", title: "Invalid header value" },
  INVALID_PROPERTY: {
    status: 400,
    type: "/problems/invalid-property",
    title: "Invalid message property",
  },
  INVALID_PARAMETER: {
    status: 400,
    type: "/problems/invalid-parameter",
    title: "Invalid parameter",
  },
  UNAUTHORIZED: {
    status: 401,
    type: "/problems/unauthorized",
    title: "Missing or unknown API key",
  },
  FORBIDDEN: { status: 403, type: "/problems/forbidden", title: "The API key lacks this right" },
  TOPIC_PERMISSION_DENIED: {
    status: 403,
    type: "/problems/topic-permission-denied",
    title: "The topic does not allow this",
  },
  SYSTEM_TOPIC: {
    status: 403,
    type: "/problems/system-topic",
    title: "Clients may not write to this topic",
  },
  TOPIC_NOT_FOUND: { status: 404, type: "/problems/topic-not-found", title: "No such topic" },
  GROUP_NOT_FOUND: {
    status: 404,
    type: "/problems/group-not-found",
    title: "No such consumer group",
  },
  QUEUE_NOT_FOUND: { status: 404, type: "/problems/queue-not-found", title: "No such queue" },
  SUBSCRIPTION_NOT_FOUND: {
    status: 404,
    type: "/problems/subscription-not-found",
    title: "No such webhook subscription",
  },
  WEBHOOK_URL_REFUSED: {
    status: 400,
    type: "/problems/webhook-url-refused",
    title: "The webhook URL is not allowed",
  },
  SCHEDULE_NOT_FOUND: {
    status: 404,
    type: "/problems/schedule-not-found",
    title: "No such schedule",
  },
  SCHEDULE_EXISTS: {
    status: 409,
    type: "/problems/schedule-exists",
    title: "Another schedule has this id",
  },
  RECEIPT_HANDLE_UNKNOWN: {
    status: 404,
    type: "/problems/receipt-handle-unknown",
    title: "No such receipt handle",
  },
  RECEIPT_HANDLE_EXPIRED: {
    status: 409,
    type: "/problems/receipt-handle-expired",
    title: "The invisible time has passed",
  },
  RECEIPT_HANDLE_SETTLED: {
    status: 409,
    type: "/problems/receipt-handle-settled",
    title: "The receipt handle was already acknowledged",
  },
  TRANSACTION_NOT_FOUND: {
    status: 404,
    type: "/problems/transaction-not-found",
    title: "No such transaction",
  },
  TRANSACTION_DECIDED: {
    status: 409,
    type: "/problems/transaction-decided",
    title: "The transaction was decided otherwise",
  },
  MESSAGE_NOT_FOUND: { status: 404, type: "/problems/message-not-found", title: "No such message" },
  ROUTE_NOT_FOUND: { status: 404, type: "/problems/not-found", title: "No such route" },
  METHOD_NOT_ALLOWED: {
    status: 405,
    type: "/problems/method-not-allowed",
    title: "Method not allowed",
  },
  REQUEST_TIMEOUT: {
    status: 408,
    type: "/problems/request-timeout",
    title: "The request body arrived too slowly",
  },
  BODY_INCOMPLETE: {
    status: 400,
    type: "/problems/body-incomplete",
    title: "The request body could not be read to its end",
  },
  IDEMPOTENCY_CONFLICT: {
    status: 422,
    type: "/problems/idempotency-key-reused",
    title: "Idempotency-Key reused with a different request",
  },
  ALREADY_DELIVERED: {
    status: 409,
    type: "/problems/already-delivered",
    title: "The scheduled message was already delivered",
  },
  IDEMPOTENCY_IN_FLIGHT: {
    status: 409,
    type: "/problems/idempotency-key-in-flight",
    title: "A request with this Idempotency-Key is still running",
  },
  OFFSET_OUT_OF_RANGE: {
    status: 416,
    type: "/problems/offset-out-of-range",
    title: "Offset outside the queue",
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    type: "/problems/payload-too-large",
    title: "Request body too large",
  },
  MESSAGE_TOO_LARGE: {
    status: 413,
    type: "/problems/message-too-large",
    title: "Message body too large",
  },
  PROPERTIES_TOO_LARGE: {
    status: 413,
    type: "/problems/properties-too-large",
    title: "Message properties too large",
  },
  TOO_MANY_ITEMS: {
    status: 413,
    type: "/problems/too-many-batch-items",
    title: "Too many messages in one batch",
  },
  /** topicsMax: user topics only; %RETRY%/%DLQ% and the broker's own topics never count. */
  /** A lock asked for by a client with no live heartbeat in the group (RocketMQ answers
   * such a client an empty set, which says nothing of why). */
  CLIENT_NOT_MEMBER: {
    status: 409,
    type: "/problems/client-not-member",
    title: "The client has no live heartbeat in this group",
  },
  TOO_MANY_TOPICS: {
    status: 409,
    type: "/problems/too-many-topics",
    title: "The broker holds topicsMax topics",
  },
  TOO_MANY_GROUPS: {
    status: 409,
    type: "/problems/too-many-groups",
    title: "The broker holds groupsMax consumer groups",
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    type: "/problems/unsupported-media-type",
    title: "Unsupported content type",
  },
  TOO_MANY_WAITING: {
    status: 429,
    type: "/problems/too-many-held-pulls",
    title: "Too many long polls are waiting",
  },
  /** A broker group named in a topic's route (cluster router, docs/cluster.md) that is not
   * live in this cluster, or not in that topic's route. */
  BROKER_GROUP_NOT_FOUND: {
    status: 404,
    type: "/problems/broker-group-not-found",
    title: "No such broker group",
  },
  /** Removing a group from a topic's route before it drained (state draining, no lag). */
  BROKER_GROUP_NOT_DRAINED: {
    status: 409,
    type: "/problems/broker-group-not-drained",
    title: "The broker group still has messages to consume",
  },
  /** The topic's route forbids the change (its last active group), or it kept changing
   * under this writer. */
  TOPIC_ROUTE_CONFLICT: {
    status: 409,
    type: "/problems/topic-route-conflict",
    title: "The topic's route does not allow this",
  },
  INTERNAL: { status: 500, type: "/problems/internal", title: "Internal error" },
  STORE_NOT_WRITABLE: {
    status: 503,
    type: "/problems/store-not-writable",
    title: "The broker is not taking writes",
  },
  BROKER_UNAVAILABLE: {
    status: 503,
    type: "/problems/broker-unavailable",
    title: "No broker could be reached",
  },
  /** A call only the cluster router (stateless functions over many groups) answers. */
  CLUSTER_ROUTER_REQUIRED: {
    status: 501,
    type: "/problems/cluster-router-required",
    title: "This needs the cluster router",
  },
  NOT_LEADER: { status: 503, type: "/problems/not-leader", title: "This broker is not the leader" },
  /** The broker is recovering its store after a start; GET /readyz shows how far. */
  RECOVERING: {
    status: 503,
    type: "/problems/recovering",
    title: "The broker is recovering its store",
  },
  FLUSH_TIMEOUT: {
    status: 504,
    type: "/problems/flush-timeout",
    title: "Durability not confirmed in time",
  },
  /** SYNC replication: the master wrote the message but did not acknowledge it: too few
   * replicas confirmed it in time (RocketMQ FLUSH_SLAVE_TIMEOUT, 12), the slaves left the
   * in-sync set during the put (SLAVE_NOT_AVAILABLE, 11, after the store), or the lease
   * ended meanwhile; extension `cause` says which. It may still be delivered: retry with an
   * Idempotency-Key. A 504, as every answer after a write: the SDK and the cluster router
   * send a 503 again, so a 503 must mean nothing was written. */
  REPLICATION_TIMEOUT: {
    status: 504,
    type: "/problems/replication-timeout",
    title: "Replication not confirmed in time",
  },
  /** SYNC replication: fewer in-sync replicas than inSyncReplicas before the put (RocketMQ
   * 5's IN_SYNC_REPLICAS_NOT_ENOUGH); nothing was written. */
  REPLICAS_NOT_AVAILABLE: {
    status: 503,
    type: "/problems/replicas-not-available",
    title: "Not enough in-sync replicas",
  },
} as const;

export type ProblemCode = keyof typeof PROBLEMS;

export interface ProblemJson {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  [extension: string]: unknown;
}

export class BrokerError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(
    readonly code: ProblemCode,
    detail: string,
    readonly extensions: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(detail, options);
    this.name = "BrokerError";
    this.status = PROBLEMS[code].status;
    this.type = PROBLEMS[code].type;
  }

  toProblem(): ProblemJson {
    return {
      ...this.extensions,
      type: this.type,
      title: PROBLEMS[this.code].title,
      status: this.status,
      detail: this.message,
      code: this.code,
    };
  }

  static fromProblem(problem: Partial<ProblemJson>, status: number): BrokerError {
    const code = (problem.code && problem.code in PROBLEMS ? problem.code : undefined) ??
      (Object.keys(PROBLEMS) as ProblemCode[]).find((c) => PROBLEMS[c].type === problem.type) ??
      (status >= 500 ? "BROKER_UNAVAILABLE" : "BAD_REQUEST");
    const { type: _t, title: _ti, status: _s, detail, code: _c, ...rest } = problem;
    return new BrokerError(code, detail ?? `Broker answered ${status}`, rest);
  }
}
