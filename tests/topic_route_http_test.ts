// GET /v1/topics/{topic}/route and the route changes on a single broker, as a real process
// under Deno and under Bun: its own group at slot 0 (global ids are its own), and the
// changes refused with CLUSTER_ROUTER_REQUIRED (501), as are upserts naming other groups.
import assert from "node:assert/strict";
import { BrokerError, type ProblemCode } from "../client/mod.ts";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";
import { AdminHttp } from "../cli/admin_http.ts";

const refused = (code: ProblemCode, status: number) => (e: unknown) =>
  e instanceof BrokerError && e.code === code && e.status === status;

for (const runtime of RUNTIMES) {
  Deno.test(`topic route on a single broker (${runtime})`, async () => {
    await using broker = await startBroker(runtime, { env: { MQ_BROKER_NAME: "solo" } });
    const c = broker.client;
    await c.upsertTopic("t", { readQueueNums: 2, writeQueueNums: 3, brokerGroups: ["solo"] });
    assert.deepEqual(await c.topicRoute("t"), {
      topic: "t",
      brokerGroups: [{ name: "solo", url: "", epoch: 0, state: "active", slot: 0 }],
      queues: [
        { queueId: 0, brokerGroup: "solo", localQueueId: 0, readable: true, writable: true },
        { queueId: 1, brokerGroup: "solo", localQueueId: 1, readable: true, writable: true },
        { queueId: 2, brokerGroup: "solo", localQueueId: 2, readable: false, writable: true },
      ],
    });
    await assert.rejects(c.topicRoute("nope"), refused("TOPIC_NOT_FOUND", 404));
    await assert.rejects(c.addTopicGroup("t", "other"), refused("CLUSTER_ROUTER_REQUIRED", 501));
    await assert.rejects(c.drainTopicGroup("t", "solo"), refused("CLUSTER_ROUTER_REQUIRED", 501));
    await assert.rejects(
      c.removeTopicGroup("t", "solo", { force: true }),
      refused("CLUSTER_ROUTER_REQUIRED", 501),
    );
    await assert.rejects(
      c.upsertTopic("u", { brokerGroups: ["solo", "other"] }),
      refused("CLUSTER_ROUTER_REQUIRED", 501),
    );
    await assert.rejects(c.getTopic("u"), refused("TOPIC_NOT_FOUND", 404), "nothing was made");
    await assert.rejects(
      c.upsertTopic("u", { brokerGroups: "solo" } as never),
      refused("INVALID_PARAMETER", 400),
    );
    const bad = await fetch(`${broker.url}/v1/topics/t/route/groups/solo?force=yes`, {
      method: "DELETE",
    });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).code, "INVALID_PARAMETER");
    const badBody = await fetch(`${broker.url}/v1/topics/t/route/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ group: "x" }),
    });
    assert.equal(badBody.status, 400);
    await badBody.body?.cancel();

    // The drain status (what is still owed on the topic here), over the SDK's admin calls.
    const admin = new AdminHttp(broker.url);
    await c.produce("t", { body: "x", queueId: 0 });
    const status = await admin.drainStatus("t", ["cg"]);
    assert.deepEqual(status, {
      topic: "t",
      brokerGroup: "solo",
      consumers: ["cg"],
      groups: [{ group: "cg", unconsumed: 1, inFlight: 0, retry: 0 }],
      delayed: 0,
      openTransactions: 0,
      drained: false,
    });
    assert.equal((await admin.drainStatus("t")).drained, true, "no consumer group yet");
    await assert.rejects(admin.drainStatus("nope"), refused("TOPIC_NOT_FOUND", 404));
  });
}
