// The functions' BrokerResolver in a cluster: every request gets the one cluster client
// (the data plane, runtime/cluster/client*.ts, made by the factory the entry file passes,
// so this module does not import it), which routes each call to the group that owns the
// queue. A failed call that suggests stale routes drops the route cache.
import type { BrokerClient, BrokerResolver } from "../protocol/core_api.ts";
import type { ClusterRouteSource } from "./route_source.ts";

export class ClusterResolver implements BrokerResolver {
  #client: BrokerClient | undefined;

  constructor(
    private readonly source: ClusterRouteSource,
    private readonly makeClient: (source: ClusterRouteSource) => BrokerClient,
  ) {}

  get(): Promise<BrokerClient> {
    return Promise.resolve(this.#client ??= this.makeClient(this.source));
  }

  failed(_client: BrokerClient, _error: unknown): void {
    this.source.invalidate();
  }
}
