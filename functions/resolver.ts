// Split mode and Deploy: find the broker through the KV route table (the NameServer's
// role) and talk to it over HTTP, or HTTPS when it registered an https:// URL (brokerUrl).
// A route is cached for `cacheMs`; a failed call (unreachable, not leader) drops the cache
// so the next request re-reads the table, and a failover needs no restart here.
import type { BrokerClient, BrokerResolver } from "../runtime/protocol/core_api.ts";
import { BrokerError } from "../runtime/protocol/errors.ts";
import { brokerUrl, type RouteEntry } from "../runtime/protocol/routes.ts";

export interface RouteSource {
  /** Live brokers' route entries (address, and url when it is https://), best first. */
  brokers(): Promise<Pick<RouteEntry, "address" | "url">[]>;
}

/** Builds the client that reaches the broker at `baseUrl` (the entry file passes the SDK's
 * MqClient, so this module depends on the core interface only). */
export type ClientFactory = (baseUrl: string) => BrokerClient;

export class KvRouteResolver implements BrokerResolver {
  #cached: { client: BrokerClient; until: number } | undefined;

  constructor(
    private readonly routes: RouteSource,
    private readonly options: { connect: ClientFactory; cacheMs: number; nowMs: () => number },
  ) {}

  async get(): Promise<BrokerClient> {
    const now = this.options.nowMs();
    if (this.#cached && this.#cached.until > now) return this.#cached.client;
    const [entry] = await this.routes.brokers();
    if (!entry) {
      throw new BrokerError(
        "BROKER_UNAVAILABLE",
        "No live broker is registered in the route table",
      );
    }
    const client = this.options.connect(brokerUrl(entry));
    this.#cached = { client, until: now + this.options.cacheMs };
    return client;
  }

  failed(client: BrokerClient): void {
    if (this.#cached?.client === client) this.#cached = undefined;
  }
}
