// Transactional messages over HTTP (docs/transactions.md): begin, commit, rollback, state,
// and the two ways to answer the broker's checks: a signed check URL (checkHandler, a
// fetch handler) or a long-poll loop (runTransactionChecks). Works on Deno, Bun, Node and
// in browsers; no imports beyond the protocol types and the webhook verifier.
import type { TransactionApi } from "../runtime/protocol/core_api.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";
import { signalOf, type SignalSource } from "../runtime/protocol/types.ts";
import type { ProduceMessage } from "../runtime/protocol/types.ts";
import type {
  TransactionBegun,
  TransactionCheck,
  TransactionCheckAnswer,
  TransactionCheckInput,
  TransactionCheckView,
  TransactionDecision,
  TransactionPollOptions,
  TransactionView,
} from "../runtime/protocol/transaction_types.ts";
import { verifyWebhook, WebhookVerificationError } from "./webhooks.ts";

export type {
  TransactionBegun,
  TransactionCheck,
  TransactionCheckAnswer,
  TransactionCheckView,
  TransactionView,
};

export interface TransactionClientOptions {
  /** e.g. "http://127.0.0.1:8080" */
  baseUrl: string;
  /** Bearer API key. */
  token?: string;
  fetch?: typeof fetch;
}

/** What beginTransaction accepts: text or bytes and the message attributes (no delay). */
export type TransactionalMessage = Omit<ProduceMessage, "body"> & { body: string | Uint8Array };

const enc = new TextEncoder();
const seg = encodeURIComponent;

export class TransactionClient implements TransactionApi {
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: TransactionClientOptions) {
    this.#base = options.baseUrl.replace(/\/$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** Stores a half message; deliver it with commit(transactionId). */
  beginTransaction(
    topic: string,
    message: TransactionalMessage,
    producerGroup: string,
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
    const body = typeof message.body === "string" ? enc.encode(message.body) : message.body;
    return this.#request("POST", `/v1/topics/${seg(topic)}/messages`, { headers, body });
  }

  commit(transactionId: string): Promise<TransactionView> {
    return this.endTransaction(transactionId, "COMMIT");
  }

  rollback(transactionId: string): Promise<TransactionView> {
    return this.endTransaction(transactionId, "ROLLBACK");
  }

  endTransaction(transactionId: string, decision: TransactionDecision): Promise<TransactionView> {
    const verb = decision === "COMMIT" ? "commit" : "rollback";
    return this.#request("POST", `/v1/transactions/${seg(transactionId)}/${verb}`);
  }

  getTransaction(transactionId: string): Promise<TransactionView> {
    return this.#request("GET", `/v1/transactions/${seg(transactionId)}`);
  }

  setTransactionCheck(group: string, input: TransactionCheckInput): Promise<TransactionCheckView> {
    return this.#request("PUT", `/v1/producer-groups/${seg(group)}/transaction-check`, {
      json: input,
    });
  }

  getTransactionCheck(group: string): Promise<TransactionCheckView> {
    return this.#request("GET", `/v1/producer-groups/${seg(group)}/transaction-check`);
  }

  deleteTransactionCheck(group: string): Promise<void> {
    return this.#request("DELETE", `/v1/producer-groups/${seg(group)}/transaction-check`);
  }

  async pollTransactionChecks(
    group: string,
    options: TransactionPollOptions = {},
    signal?: SignalSource,
  ): Promise<TransactionCheck[]> {
    const q = new URLSearchParams();
    if (options.waitMs !== undefined) q.set("waitMs", String(options.waitMs));
    if (options.max !== undefined) q.set("max", String(options.max));
    const res = await this.#request<{ checks: TransactionCheck[] }>(
      "GET",
      `/v1/producer-groups/${seg(group)}/transaction-checks?${q}`,
      { signal: signalOf(signal) },
    );
    return res.checks;
  }

  async #request<T>(
    method: string,
    path: string,
    options: {
      headers?: Record<string, string>;
      body?: Uint8Array;
      json?: unknown;
      signal?: AbortSignal;
    } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body = options.body as BodyInit | undefined;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    let res: Response;
    try {
      res = await this.#fetch(`${this.#base}${path}`, {
        method,
        headers,
        body,
        signal: options.signal,
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new BrokerError("BROKER_UNAVAILABLE", `Cannot reach ${this.#base}`, {}, {
        cause: err,
      });
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    let value: unknown;
    try {
      value = text ? JSON.parse(text) : undefined;
    } catch {
      throw new BrokerError(
        res.status >= 500 ? "BROKER_UNAVAILABLE" : "BAD_REQUEST",
        `Broker answered ${res.status} with a body that is not JSON`,
      );
    }
    if (!res.ok) {
      throw BrokerError.fromProblem((value ?? {}) as Record<string, unknown>, res.status);
    }
    return value as T;
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
  client: Pick<TransactionApi, "pollTransactionChecks" | "endTransaction">,
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
    } catch (err) {
      if (signal.aborted) return;
      if (!(err instanceof BrokerError)) throw err;
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
): C & TransactionApi {
  return new Proxy(client, {
    get(target, prop) {
      const source: object = !(prop in target) && prop in tx ? tx : target;
      const value = Reflect.get(source, prop, source);
      return typeof value === "function" ? value.bind(source) : value;
    },
  }) as C & TransactionApi;
}
