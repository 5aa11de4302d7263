// How a route finds its core interface per request (the broker in this process, or the
// leader found in the route table), apart from route.ts: the first produce loads this, not zod.
import type { BrokerClient, BrokerResolver } from "../../runtime/protocol/core_api.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";

/** A core interface found per request: the broker in this process, or the leader found in
 * the route table. */
export interface ApiSource<Api> {
  get(): Promise<Api>;
  /** Told of a failed call; drops the route when the failure suggests it is stale. */
  failed(api: Api, err: unknown): void;
  /** get(), then `f`, telling failed() when it throws. */
  call<T>(f: (api: Api) => Promise<T>): Promise<T>;
}

/** The resolver as an ApiSource; a family declares the narrower interface it uses and is
 * given this one (BrokerClient implements them all). */
export function apiSource(resolver: BrokerResolver): ApiSource<BrokerClient> {
  // Only a failure of the broker drops the resolved routes: not the caller's own abort or
  // timeout (AbortError / TimeoutError, the signal's reason rethrown as it is).
  const failed = (api: BrokerClient, err: unknown) => {
    const name = (err as { name?: unknown } | null)?.name;
    if (name === "AbortError" || name === "TimeoutError") return;
    if (
      !(err instanceof BrokerError) || err.code === "BROKER_UNAVAILABLE" ||
      err.code === "NOT_LEADER"
    ) {
      resolver.failed(api, err);
    }
  };
  return {
    get: () => resolver.get(),
    failed,
    call: async (f) => {
      const api = await resolver.get();
      try {
        return await f(api);
      } catch (err) {
        failed(api, err);
        throw err;
      }
    },
  };
}
