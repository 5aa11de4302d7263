// QstashApi over HTTP, for the functions in split mode and on Deploy: the broker's narrow
// admin routes under /v1/qstash (functions/routes/qstash_core.ts, docs/api.md). Refusals
// come back as the broker's problem+json, turned into the same BrokerErrors.
import type { BrokerClient, QstashApi, QstashOf } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type {
  QstashScheduleDetails,
  QstashSettings,
  QstashSigningKeys,
} from "../../runtime/protocol/qstash.ts";
import type { WireMessage } from "../../runtime/protocol/types.ts";
import { REDRIVE_IDS_MAX } from "../../runtime/protocol/limits.ts";

export interface RemoteOptions {
  /** e.g. "http://127.0.0.1:8080" */
  baseUrl: string;
  /** The API key presented to the broker (an admin key there). */
  token?: string;
  fetch?: typeof fetch;
}

const enc = encodeURIComponent;

export class RemoteQstash implements QstashApi {
  readonly #base: string;
  readonly #fetch: typeof fetch;

  constructor(private readonly options: RemoteOptions) {
    this.#base = options.baseUrl.replace(/\/$/, "");
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  qstashSigningKeys(): Promise<QstashSigningKeys> {
    return this.#call("GET", "/v1/qstash/keys");
  }

  rotateQstashSigningKeys(): Promise<QstashSigningKeys> {
    return this.#call("POST", "/v1/qstash/keys/rotate");
  }

  setQstashSigningKeys(keys: QstashSigningKeys): Promise<QstashSigningKeys> {
    return this.#call("PUT", "/v1/qstash/keys", keys);
  }

  async checkDestination(url: string): Promise<void> {
    await this.#call("POST", "/v1/qstash/destination-checks", { url });
  }

  qstashSettings(): Promise<QstashSettings> {
    return this.#call("GET", "/v1/qstash/settings");
  }

  async listDeadLetters(group: string, max: number): Promise<WireMessage[]> {
    const q = Number.isFinite(max) ? `?max=${max}` : "";
    return (await this.#call<{ messages: WireMessage[] }>(
      "GET",
      `/v1/qstash/dlq/${enc(group)}${q}`,
    )).messages;
  }

  async retryDeadLetters(group: string, messageIds: string[]): Promise<string[]> {
    const found: string[] = [];
    for (const part of chunks(messageIds)) {
      found.push(
        ...(await this.#call<{ messageIds: string[] }>(
          "POST",
          `/v1/qstash/dlq/${enc(group)}/retry`,
          { messageIds: part },
        )).messageIds,
      );
    }
    return found;
  }

  async deleteDeadLetters(group: string, messageIds: string[]): Promise<number> {
    let deleted = 0;
    for (const part of chunks(messageIds)) {
      deleted += (await this.#call<{ deleted: number }>(
        "POST",
        `/v1/qstash/dlq/${enc(group)}/delete`,
        { messageIds: part },
      )).deleted;
    }
    return deleted;
  }

  qstashSchedule(id: string): Promise<QstashScheduleDetails> {
    return this.#call("GET", `/v1/qstash/schedules/${enc(id)}`);
  }

  async #call<T>(method: string, path: string, json?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (json !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await this.#fetch(`${this.#base}${path}`, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
      });
    } catch (err) {
      throw new BrokerError(
        "BROKER_UNAVAILABLE",
        `Cannot reach ${this.#base}: ${(err as Error).message}`,
        {},
        { cause: err },
      );
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

/** The ids in calls the route takes (at most REDRIVE_IDS_MAX each). */
function chunks(ids: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += REDRIVE_IDS_MAX) out.push(ids.slice(i, i + REDRIVE_IDS_MAX));
  return out;
}

/**
 * Wraps the factory of a resolver's broker clients so each client made also has its
 * QstashApi over HTTP at the same address: `connect` for the resolver, `qstash` for
 * createApp's FunctionsOptions.qstash.
 */
export function remoteQstash<C extends BrokerClient>(
  connect: (baseUrl: string) => C,
  options: Omit<RemoteOptions, "baseUrl">,
): { connect: (baseUrl: string) => C; qstash: QstashOf } {
  const apis = new WeakMap<BrokerClient, QstashApi>();
  return {
    connect: (baseUrl) => {
      const client = connect(baseUrl);
      apis.set(client, new RemoteQstash({ ...options, baseUrl }));
      return client;
    },
    qstash: (client) => {
      const api = apis.get(client);
      if (!api) throw new BrokerError("INTERNAL", "A broker client without its QStash calls");
      return api;
    },
  };
}
