// ClusterResolver: one cluster client for every request, made once by the factory it was
// given; a failed call drops the source's cached routes.
import assert from "node:assert/strict";
import type { BrokerClient } from "../protocol/core_api.ts";
import type { ClusterRouteSource } from "./route_source.ts";
import { ClusterResolver } from "./cluster_resolver.ts";

Deno.test("ClusterResolver: one client from the factory; failed() invalidates the routes", async () => {
  const invalidated: (string | undefined)[] = [];
  const source = {
    invalidate: (topic?: string) => invalidated.push(topic),
  } as unknown as ClusterRouteSource;
  const made: ClusterRouteSource[] = [];
  const client = {} as BrokerClient;
  const resolver = new ClusterResolver(source, (s) => {
    made.push(s);
    return client;
  });
  assert.equal(await resolver.get(), client);
  assert.equal(await resolver.get(), client);
  assert.deepEqual(made, [source]);
  resolver.failed(client, new Error("unreachable"));
  assert.deepEqual(invalidated, [undefined]);
});
