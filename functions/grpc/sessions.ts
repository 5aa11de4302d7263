// The clients this process has settings for, by x-mq-client-id (RocketMQ's
// GrpcClientSettingsManager): what a Telemetry stream told us, kept while the stream is
// open and dropped at NotifyClientTermination or when the stream ends. Bounded.
import { BrokerError } from "../../runtime/protocol/errors.ts";

export const ClientType = { PRODUCER: 1, PUSH_CONSUMER: 2, SIMPLE_CONSUMER: 3 } as const;

export interface ClientSession {
  clientId: string;
  clientType: number;
  /** Consumer group (our name), for consumers. */
  group?: string;
}

export class ClientSessions {
  #byId = new Map<string, ClientSession>();

  constructor(private readonly max: number) {}

  get(clientId: string): ClientSession | undefined {
    return this.#byId.get(clientId);
  }

  set(session: ClientSession): void {
    if (!this.#byId.has(session.clientId) && this.#byId.size >= this.max) {
      throw new BrokerError(
        "TOO_MANY_WAITING",
        `Cannot keep settings of another client: ${this.max} are connected (grpcClientsMax)`,
      );
    }
    this.#byId.set(session.clientId, session);
  }

  drop(clientId: string): void {
    this.#byId.delete(clientId);
  }

  get size(): number {
    return this.#byId.size;
  }
}
