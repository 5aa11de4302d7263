// The topic route routes in front of the cluster router's admin (ClusterTopicAdmin over a
// Deno KV file and in-process Brokers as groups), through the app as the functions serve
// it: the route view, expansion and drain answers, and refusals as problem+json with their
// codes (BROKER_GROUP_NOT_DRAINED carries the lag left).
import assert from "node:assert/strict";
import { createApp } from "../functions/app.ts";
import { TEST_LIMITS } from "../functions/testing.ts";
import type { BrokerClient } from "../runtime/protocol/core_api.ts";
import { ClusterTopicAdmin } from "../runtime/cluster/topic_admin.ts";
import { withGroups } from "./support/cluster_testing.ts";

Deno.test("topic route routes over the cluster admin: view, add, drain, remove refusals", () =>
  withGroups(["g-a", "g-b"], async (g) => {
    await g.register();
    const admin = new ClusterTopicAdmin(g.source());
    // The data plane is another module's: the admin's calls are what these routes use.
    const client = {
      upsertTopic: (n: string, u: never) => admin.upsertTopic(n, u),
      getTopic: (n: string) => admin.getTopic(n),
      topicRoute: (t: string) => admin.topicRoute(t),
      addTopicGroup: (t: string, b: string) => admin.addTopicGroup(t, b),
      drainTopicGroup: (t: string, b: string) => admin.drainTopicGroup(t, b),
      removeTopicGroup: (t: string, b: string, o: never) => admin.removeTopicGroup(t, b, o),
    } as unknown as BrokerClient;
    const app = await createApp({
      broker: { get: () => Promise.resolve(client), failed: () => {} },
      apiKeys: [],
      limits: TEST_LIMITS,
      log: () => {},
    });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await app.request(path, {
        method,
        ...(body !== undefined && {
          body: JSON.stringify(body),
          headers: { "content-type": "application/json" },
        }),
      });
      return { status: res.status, json: await res.json() };
    };

    const created = await call("PUT", "/v1/topics/t", {
      readQueueNums: 1,
      writeQueueNums: 1,
      brokerGroups: ["g-a"],
    });
    assert.equal(created.status, 200);
    assert.deepEqual(created.json.readQueueNums, 1);
    const unknown = await call("PUT", "/v1/topics/u", { brokerGroups: ["g-x"] });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.code, "BROKER_GROUP_NOT_FOUND");

    const added = await call("POST", "/v1/topics/t/route/groups", { brokerGroup: "g-b" });
    assert.equal(added.status, 200);
    assert.deepEqual(added.json.queues.map((q: { queueId: number }) => q.queueId), [0, 1024]);

    await g.brokers.get("g-a")!.produce("t", { body: new Uint8Array([1]) });
    await g.brokers.get("g-a")!.upsertGroup("cg");
    await g.brokers.get("g-a")!.commitOffset("cg", "t", 0, 0);
    const notDrained = await call("DELETE", "/v1/topics/t/route/groups/g-a");
    assert.equal(notDrained.status, 409);
    assert.equal(notDrained.json.code, "BROKER_GROUP_NOT_DRAINED");

    const drained = await call("POST", "/v1/topics/t/route/groups/g-a/drain");
    assert.equal(drained.status, 200);
    assert.equal(drained.json.brokerGroups[0].state, "draining");
    const lagging = await call("DELETE", "/v1/topics/t/route/groups/g-a");
    assert.equal(lagging.status, 409);
    assert.deepEqual(lagging.json.owed.groups, [
      { group: "cg", unconsumed: 1, inFlight: 0, retry: 0 },
    ]);
    const forced = await call("DELETE", "/v1/topics/t/route/groups/g-a?force=true");
    assert.equal(forced.status, 200);
    assert.deepEqual(forced.json.brokerGroups.map((b: { name: string }) => b.name), ["g-b"]);

    const route = await call("GET", "/v1/topics/t/route");
    assert.deepEqual(route.json, forced.json);
    assert.equal((await call("GET", "/v1/topics/nope/route")).status, 404);
  }));
