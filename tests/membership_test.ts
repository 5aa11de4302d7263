// Long-lived consumers in a real broker process (Deno and Bun): heartbeats, the group's
// generation, RocketMQ's averagely allocation over the live members, rebalance when one
// leaves, and ordered-consumption queue locks.
import assert from "node:assert/strict";
import { RUNTIMES } from "./harness/process.ts";
import { startBroker } from "./harness/broker.ts";

for (const runtime of RUNTIMES) {
  Deno.test(`consumer membership on ${runtime}: heartbeat, assignment, rebalance, locks`, async () => {
    await using b = await startBroker(runtime);
    const mq = b.client;
    await mq.upsertTopic("Orders", { readQueueNums: 8, writeQueueNums: 8 });
    await mq.upsertGroup("billing");
    const subs = [{ topic: "Orders" }];
    for (const id of ["c-1", "c-2", "c-3"]) {
      await mq.heartbeat("billing", { clientId: id, subscriptions: subs });
    }
    const before = await mq.heartbeat("billing", { clientId: "c-1", subscriptions: subs });
    assert.deepEqual(before.members, ["c-1", "c-2", "c-3"]);
    const assigned = await Promise.all(
      ["c-1", "c-2", "c-3"].map((id) => mq.assignment("billing", id, "Orders")),
    );
    assert.deepEqual(assigned.map((a) => a.queueIds), [[0, 1, 2], [3, 4, 5], [6, 7]]);
    // An explicit list (the cluster router's global ids across broker groups).
    const global = await Promise.all(
      ["c-1", "c-2", "c-3"].map((id) =>
        mq.assignment("billing", id, "Orders", { queueIds: [2048, 0, 1024] })
      ),
    );
    assert.deepEqual(global.map((a) => a.queueIds), [[0], [1024], [2048]]);
    const bad = await fetch(
      `${b.url}/v1/groups/billing/assignment?topic=Orders&clientId=c-1&queueIds=1,x`,
    );
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
    // Each slot's broker group (the router's, for machine rooms); a slot it omits is refused.
    const named = await Promise.all(
      ["c-1", "c-2", "c-3"].map((id) =>
        mq.assignment("billing", id, "Orders", {
          queueIds: [2048, 0, 1024],
          slotBrokers: ["hz@broker-a", "sh@broker-b", "sh@broker-c"],
        })
      ),
    );
    assert.deepEqual(named.map((a) => a.queueIds), [[0], [1024], [2048]]);
    const unnamed = await fetch(
      `${b.url}/v1/groups/billing/assignment?topic=Orders&clientId=c-1&queueIds=0,2048&slotBrokers=a`,
    );
    assert.equal(unnamed.status, 400);
    assert.match((await unnamed.json()).detail, /slot 2/);

    const after = await mq.unregister("billing", "c-2");
    assert.notEqual(after.generation, before.generation, "a leave is a new generation");
    assert.deepEqual((await mq.assignment("billing", "c-1", "Orders")).queueIds, [0, 1, 2, 3]);
    assert.deepEqual((await mq.assignment("billing", "c-3", "Orders")).queueIds, [4, 5, 6, 7]);
    assert.deepEqual(
      (await mq.assignment("billing", "c-2", "Orders")).queueIds,
      [],
      "a member that left gets nothing",
    );

    assert.deepEqual(await mq.lockQueues("billing", "c-1", "Orders", [0, 1]), [0, 1]);
    assert.deepEqual(
      await mq.lockQueues("billing", "c-3", "Orders", [1, 2]),
      [2],
      "queue 1 is held by c-1",
    );
    await mq.lockQueues("billing", "c-1", "Orders", [1], true);
    assert.deepEqual(await mq.lockQueues("billing", "c-3", "Orders", [1, 2]), [1, 2]);
    // A client without a heartbeat (c-2 left) is told why it gets no queue.
    await assert.rejects(mq.lockQueues("billing", "c-2", "Orders", [3]), (e: {
      code?: string;
      status?: number;
      message?: string;
    }) => {
      assert.equal(e.code, "CLIENT_NOT_MEMBER");
      assert.equal(e.status, 409);
      assert.match(e.message ?? "", /no live heartbeat in group billing/);
      return true;
    });

    await assert.rejects(
      mq.heartbeat("billing", { clientId: "", subscriptions: subs }),
      (e: { code?: string }) => e.code === "INVALID_PARAMETER",
    );
    await assert.rejects(
      mq.heartbeat("nobody", { clientId: "x", subscriptions: subs }),
      (e: { code?: string }) => e.code === "GROUP_NOT_FOUND",
    );
  });
}
