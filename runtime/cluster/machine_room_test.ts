// Machine rooms across broker groups: the cluster router gives each queue of the global
// list its own group's name (slotBrokers), so MACHINE_ROOM_NEARBY keeps a consumer on
// the queues of its room's group, as RocketMQ's client-side rebalance does over the
// brokers of a topic route.
import assert from "node:assert/strict";
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "./client.ts";
import { BrokerError } from "../protocol/errors.ts";

const noTopics = {} as ClusterTopicAdminPort;

Deno.test("ClusterClient assignment: MACHINE_ROOM_NEARBY over groups in two rooms", async () => {
  await withCluster(
    2,
    async (groups, routes) => {
      const client = new ClusterClient(routes, noTopics, {});
      await routes.createTopic("rooms", 2);
      await client.upsertGroup("near", {});
      const join = (clientId: string, room: string) =>
        client.heartbeat("near", {
          clientId,
          subscriptions: [{ topic: "rooms" }],
          strategy: "MACHINE_ROOM_NEARBY",
          room,
        });
      await join("c-hz", "hz");
      await join("c-sh", "sh");
      const share = async (c: string) => (await client.assignment("near", c, "rooms")).queueIds;
      // hz@g-a holds slot 0 (ids 0, 1), sh@g-b slot 1 (1024, 1025).
      assert.deepEqual(await share("c-hz"), [0, 1]);
      assert.deepEqual(await share("c-sh"), [1024, 1025]);
      // A room without consumers is shared by the whole group.
      await client.unregister("near", "c-sh");
      assert.deepEqual(await share("c-hz"), [0, 1, 1024, 1025]);
      assert.equal(groups.length, 2);
    },
    {},
    ["hz@g-a", "sh@g-b"],
  );
});

Deno.test("assignment with slotBrokers: a queue in a slot it does not name is refused", async () => {
  await withCluster(1, async (groups) => {
    const b = groups[0].broker;
    await b.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    await b.upsertGroup("g", {});
    await b.heartbeat("g", { clientId: "c", subscriptions: [{ topic: "t" }] });
    await assert.rejects(
      b.assignment("g", "c", "t", { queueIds: [0, 2048], slotBrokers: ["a", "b"] }),
      (e) => e instanceof BrokerError && e.code === "INVALID_PARAMETER" && /slot 2/.test(e.message),
    );
    await assert.rejects(
      b.assignment("g", "c", "t", { slotBrokers: ["a"] }),
      (e) => e instanceof BrokerError && e.code === "INVALID_PARAMETER",
    );
    const ok = await b.assignment("g", "c", "t", { queueIds: [0, 1024], slotBrokers: ["a", "b"] });
    assert.deepEqual(ok.queueIds, [0, 1024]);
  });
});
