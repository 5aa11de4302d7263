// Queue counts and slots a cluster topic can hold (issue #26 review 5): at most
// QUEUE_ID_STRIDE queues per group (refused typed, nothing changed; a registration reporting
// more has the rest left out with a warning), at most TOPIC_SLOTS_MAX slots (ids ≤ 65535).
import assert from "node:assert/strict";
import { BrokerError, type ProblemCode } from "../protocol/errors.ts";
import { QUEUE_ID_MAX, QUEUE_ID_STRIDE, TOPIC_SLOTS_MAX } from "../protocol/cluster_types.ts";
import { withGroups } from "../../tests/support/cluster_testing.ts";
import { ClusterTopicAdmin } from "./topic_admin.ts";
import { joinRoute } from "./route_join.ts";
import type { GroupLink } from "./route_source.ts";

const refused = (code: ProblemCode) => (e: unknown) => e instanceof BrokerError && e.code === code;

Deno.test("slots: 64 of them, the last one's ids end at the HTTP API's cap", () => {
  assert.equal(TOPIC_SLOTS_MAX, 64);
  assert.equal(TOPIC_SLOTS_MAX * QUEUE_ID_STRIDE - 1, QUEUE_ID_MAX);
});

Deno.test("cluster topic: more than QUEUE_ID_STRIDE queues on a group, or a 65th slot, are refused", () =>
  withGroups(["g-a", "g-b", "g-c"], async (g) => {
    await g.register();
    const source = g.source();
    const admin = new ClusterTopicAdmin(source);
    const c = g.brokers.get("g-c")!;
    await assert.rejects(
      admin.upsertTopic("t", { readQueueNums: QUEUE_ID_STRIDE + 1, brokerGroups: ["g-a"] }),
      refused("INVALID_PARAMETER"),
    );
    await assert.rejects(g.brokers.get("g-a")!.getTopic("t"), refused("TOPIC_NOT_FOUND"));
    await admin.upsertTopic("t", { readQueueNums: 2, writeQueueNums: 2, brokerGroups: ["g-a"] });
    await assert.rejects(
      admin.upsertTopic("t", { writeQueueNums: 2000 }),
      refused("INVALID_PARAMETER"),
    );
    // Slots used up (groups added and removed 63 times, say): no 65th.
    await source.records.update("t", (r) => ({ ...r!, nextSlot: TOPIC_SLOTS_MAX }));
    await assert.rejects(admin.addTopicGroup("t", "g-c"), refused("TOPIC_ROUTE_CONFLICT"));
    await assert.rejects(
      admin.upsertTopic("t", { brokerGroups: ["g-b"] }),
      refused("TOPIC_ROUTE_CONFLICT"),
    );
    await assert.rejects(c.getTopic("t"), refused("TOPIC_NOT_FOUND"), "nothing was made");
    assert.deepEqual((await admin.topicRoute("t")).brokerGroups.map((x) => x.name), ["g-a"]);
  }));

Deno.test("route join: queues past QUEUE_ID_STRIDE and slots past the cap are left out, with a warning", async () => {
  const link = (name: string) => ({ name, url: "", epoch: 0, client: {} } as unknown as GroupLink);
  const entry = (name: string, n: number) => ({
    cluster: "C",
    brokerName: name,
    address: "",
    epoch: 0,
    topics: [{ name: "t", readQueueNums: n, writeQueueNums: n, perm: 6 }],
    updatedAtMs: 0,
  });
  const warnings: unknown[] = [];
  const route = await joinRoute(
    {
      topic: "t",
      groups: [
        { brokerGroup: "a", slot: 0, state: "active" },
        { brokerGroup: "b", slot: 1, state: "active" },
        { brokerGroup: "c", slot: TOPIC_SLOTS_MAX, state: "active" },
      ],
      nextSlot: TOPIC_SLOTS_MAX + 1,
      updatedAtMs: 0,
    },
    { entries: [entry("a", 1500), entry("b", 8), entry("c", 1)], links: ["a", "b", "c"].map(link) },
    { create: false, log: (_level, msg, fields) => warnings.push({ msg, ...fields }) },
  );
  assert.deepEqual(route.groups.map((x) => [x.link.name, x.readQueueNums]), [["a", 1024], [
    "b",
    8,
  ]]);
  const ids = route.view.queues.map((q) => q.queueId);
  assert.equal(new Set(ids).size, ids.length, "no id twice");
  assert.equal(Math.max(...ids), QUEUE_ID_STRIDE + 7);
  assert.equal(warnings.length, 2);
});
