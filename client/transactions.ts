// Transactional messages over HTTP (docs/transactions.md): begin, commit, rollback, state,
// and the two ways to answer the broker's checks: a signed check URL (checkHandler, a fetch
// handler) or a long-poll loop (runTransactionChecks). Part of @edgemq/client: Web-standard
// APIs only, no imports beyond this folder; the wire types are the SDK's own copy of
// runtime/protocol/transaction_types.ts (tests/sdk_types_test.ts keeps them equal). The
// class implements the broker's TransactionApi (runtime/protocol/core_api.ts) by shape.
import { type CallOptions, signalOf, Transport, type TransportOptions } from "./http.ts";
import { utf8 } from "./body.ts";
import type { ProduceMessage, ProduceResult, SignalSource, WireMessage } from "./types.ts";
import { verifyWebhook, WebhookVerificationError } from "./webhooks.ts";

/** PREPARED: stored, not yet checked; CHECKING: the producer was asked at least once;
 * COMMITTED / ROLLED_BACK: decided; DISCARDED: transactionCheckMax checks went unanswered. */
export type TransactionState =
  | "PREPARED"
  | "CHECKING"
  | "COMMITTED"
  | "ROLLED_BACK"
  | "DISCARDED";

/** What a producer decides. */
export type TransactionDecision = "COMMIT" | "ROLLBACK";

/** What a producer answers a check: a decision, or UNKNOWN (ask again later). */
export type TransactionCheckAnswer = TransactionDecision | "UNKNOWN";

/** A half message stored: queueOffset is -1 until it is committed. */
export interface TransactionBegun extends ProduceResult {
  /** Equals messageId. */
  transactionId: string;
}

export interface TransactionView {
  transactionId: string;
  messageId: string;
  /** The real topic and queue the message goes to on commit. */
  topic: string;
  queueId: number;
  producerGroup: string;
  state: TransactionState;
  /** How many times the producer was asked. */
  checks: number;
  bornTimestamp: number;
  /** When it was decided (store time of its op record). */
  decidedAt?: number;
  /** The message as stored in the half topic (GET /v1/transactions/{id}). */
  message?: WireMessage;
}

/** One check-back: "what became of this transaction?" */
export interface TransactionCheck {
  transactionId: string;
  messageId: string;
  topic: string;
  queueId: number;
  producerGroup: string;
  /** This check's number, 1 to transactionCheckMax. */
  check: number;
  bornTimestamp: number;
  message: WireMessage;
}

/** PUT /v1/producer-groups/{group}/transaction-check. */
export interface TransactionCheckInput {
  url: string;
  /** Standard Webhooks secrets (whsec_…); one is generated when left out. */
  secrets?: string[];
}

export interface TransactionCheckView {
  producerGroup: string;
  url: string;
  /** In full only in the answer to the PUT that created them; masked afterwards. */
  secrets: string[];
}

export interface TransactionPollOptions {
  /** Longest wait for a first check (ms); 0 answers at once. */
  waitMs?: number;
  /** Most checks in one answer. */
  max?: number;
}

/** What beginTransaction accepts: text or bytes and the message attributes (no delay). */
export type TransactionalMessage = Omit<ProduceMessage, "body"> & { body: string | Uint8Array };

const seg = encodeURIComponent;

export class TransactionClient {
  readonly #http: Transport;

  constructor(options: TransportOptions) {
    this.#http = new Transport(options);
  }

  /** Stores a half message; deliver it with commit(transactionId). */
  beginTransaction(
    topic: string,
    message: TransactionalMessage,
    producerGroup: string,
    options: CallOptions = {},
  ): Promise<TransactionBegun> {
    const headers: Record<string, string> = {
      "mq-transaction": "begin",
      "mq-producer-group": producerGroup,
      "content-type": message.contentType ?? "application/octet-stream",
    };
    if (message.tag !== undefined) headers["mq-tag"] = message.tag;
    if (message.keys?.length) headers["mq-keys"] = message.keys.join(" ");
    if (message.shardingKey !== undefined) headers["mq-sharding-key"] = message.shardingKey;
    if (message.queueId !== undefined) headers["mq-queue-id"] = String(message.queueId);
    // Not allowed with a transaction: sent anyway, so the broker says why.
    if (message.delayMs !== undefined) headers["mq-delay-ms"] = String(message.delayMs);
    if (message.deliverAt !== undefined) headers["mq-deliver-at"] = String(message.deliverAt);
    if (message.delayLevel !== undefined) headers["mq-delay-level"] = String(message.delayLevel);
    if (message.idempotencyKey !== undefined) headers["idempotency-key"] = message.idempotencyKey;
    for (const [k, v] of Object.entries(message.properties ?? {})) headers[`mq-prop-${k}`] = v;
    const body = typeof message.body === "string" ? utf8(message.body) : message.body;
    // Not repeatable: a lost answer and a retry would leave a second half message.
    return this.#http.request("POST", `/v1/topics/${seg(topic)}/messages`, {
      headers,
      body,
      ...options,
    });
  }

  commit(transactionId: string, options?: CallOptions): Promise<TransactionView> {
    return this.#end(transactionId, "COMMIT", options);
  }

  rollback(transactionId: string, options?: CallOptions): Promise<TransactionView> {
    return this.#end(transactionId, "ROLLBACK", options);
  }

  /** COMMIT or ROLLBACK (the same decision again answers the same; safe to repeat). */
  endTransaction(
    transactionId: string,
    decision: TransactionDecision,
    _options?: { fromCheck?: boolean },
  ): Promise<TransactionView> {
    return this.#end(transactionId, decision);
  }

  getTransaction(transactionId: string, options: CallOptions = {}): Promise<TransactionView> {
    return this.#http.request("GET", `/v1/transactions/${seg(transactionId)}`, {
      ...options,
      repeatable: true,
    });
  }

  setTransactionCheck(group: string, input: TransactionCheckInput): Promise<TransactionCheckView> {
    return this.#http.request("PUT", `/v1/producer-groups/${seg(group)}/transaction-check`, {
      json: input,
      repeatable: true,
    });
  }

  getTransactionCheck(group: string): Promise<TransactionCheckView> {
    return this.#http.request("GET", `/v1/producer-groups/${seg(group)}/transaction-check`, {
      repeatable: true,
    });
  }

  async deleteTransactionCheck(group: string): Promise<void> {
    await this.#http.request("DELETE", `/v1/producer-groups/${seg(group)}/transaction-check`, {
      repeatable: true,
    });
  }

  /** With revealSecrets (an admin key), the secrets in full. */
  async listTransactionChecks(
    options: { revealSecrets?: boolean } = {},
  ): Promise<TransactionCheckView[]> {
    const qs = options.revealSecrets ? "?revealSecrets=true" : "";
    return (await this.#http.request<{ checks: TransactionCheckView[] }>(
      "GET",
      `/v1/transaction-checks${qs}`,
      { repeatable: true },
    )).checks;
  }

  async pollTransactionChecks(
    group: string,
    options: TransactionPollOptions = {},
    signal?: SignalSource,
  ): Promise<TransactionCheck[]> {
    const q = new URLSearchParams();
    if (options.waitMs !== undefined) q.set("waitMs", String(options.waitMs));
    if (options.max !== undefined) q.set("max", String(options.max));
    const res = await this.#http.request<{ checks: TransactionCheck[] }>(
      "GET",
      `/v1/producer-groups/${seg(group)}/transaction-checks?${q}`,
      { signal: signalOf(signal), holdMs: options.waitMs, repeatable: true },
    );
    return res.checks;
  }

  #end(
    transactionId: string,
    decision: TransactionDecision,
    options: CallOptions = {},
  ): Promise<TransactionView> {
    const verb = decision === "COMMIT" ? "commit" : "rollback";
    return this.#http.request("POST", `/v1/transactions/${seg(transactionId)}/${verb}`, {
      ...options,
      repeatable: true,
    });
  }
}

/** What a producer says about one of its transactions (look it up in your database). */
export type CheckDecider = (
  check: TransactionCheck,
) => TransactionCheckAnswer | Promise<TransactionCheckAnswer>;

/**
 * A fetch handler for the check URL registered with setTransactionCheck: verifies the
 * Standard Webhooks signature against `secrets`, asks `decide`, and answers
 * {"decision": …}. A bad signature is 401; a decider that throws answers UNKNOWN.
 */
export function checkHandler(
  options: { secrets: string | readonly string[]; decide: CheckDecider; toleranceSec?: number },
): (request: Request) => Promise<Response> {
  return async (request) => {
    const body = new Uint8Array(await request.arrayBuffer());
    try {
      await verifyWebhook(request.headers, body, options.secrets, {
        toleranceSec: options.toleranceSec,
      });
    } catch (err) {
      if (err instanceof WebhookVerificationError) {
        return new Response(JSON.stringify({ error: err.message }), { status: 401 });
      }
      throw err;
    }
    let decision: TransactionCheckAnswer = "UNKNOWN";
    try {
      decision = await options.decide(JSON.parse(new TextDecoder().decode(body)));
    } catch {
      decision = "UNKNOWN";
    }
    return new Response(JSON.stringify({ decision }), {
      headers: { "content-type": "application/json" },
    });
  };
}

/**
 * The long-poll twin of checkHandler, for producers that cannot take inbound calls: polls
 * the group's checks until `signal` aborts, and answers each COMMIT or ROLLBACK with
 * endTransaction (UNKNOWN is no answer; the broker asks again later).
 */
export async function runTransactionChecks(
  client: Pick<TransactionClient, "pollTransactionChecks" | "endTransaction">,
  group: string,
  decide: CheckDecider,
  options: { signal: AbortSignal; waitMs?: number; retryMs?: number },
): Promise<void> {
  const { signal } = options;
  while (!signal.aborted) {
    let checks: TransactionCheck[];
    try {
      checks = await client.pollTransactionChecks(
        group,
        { waitMs: options.waitMs ?? 10_000 },
        signal,
      );
    } catch {
      // The broker is away or refused (TOO_MANY_WAITING): try again shortly.
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, options.retryMs ?? 500));
      continue;
    }
    await Promise.all(checks.map(async (check) => {
      const answer = await Promise.resolve(decide(check)).catch(() => "UNKNOWN" as const);
      if (answer === "UNKNOWN") return;
      await client.endTransaction(check.transactionId, answer, { fromCheck: true })
        .catch(() => {}); // decided otherwise already, or the broker is away: asked again
    }));
  }
}

/** `client` (an MqClient) with the transaction calls of `tx` too: what split-mode functions
 * connect to a broker with, so the transaction routes work through them. */
export function withTransactions<C extends object>(
  client: C,
  tx: TransactionClient,
): C & TransactionClient {
  return new Proxy(client, {
    get(target, prop) {
      const source: object = !(prop in target) && prop in tx ? tx : target;
      const value = Reflect.get(source, prop, source);
      return typeof value === "function" ? value.bind(source) : value;
    },
  }) as C & TransactionClient;
}
