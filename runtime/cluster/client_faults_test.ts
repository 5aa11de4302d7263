// The cluster router under partial failure (review of issue #26, data-plane findings):
// idempotency keys stay on their group, drained or topic-less groups are moved past, POP
// never throws away what it took, aborts are no group failure, broadcasts tolerate a
// failing group, queue ids never leak, maps stay bounded, auto-create is a setting.
import assert from "node:assert/strict";
import { withCluster } from "../../tests/support/cluster_router_testing.ts";
import { ClusterClient, type ClusterTopicAdminPort } from "./client.ts";
import { ClusterContext } from "./context.ts";
import { PollRotation, sweepThenPoll } from "./poll_loop.ts";
import { TopicQueues } from "./queue_map.ts";
import { idIn, messageIn, NO_GLOBAL_QUEUE } from "./global_ids.ts";
import { BrokerError } from "../protocol/errors.ts";
import { PERM_READ } from "../protocol/types.ts";
import type { GroupLink } from "./route_source.ts";

const body = new TextEncoder().encode("m");
const noTopics = {} as ClusterTopicAdminPort;
const isCode = (code: string) => (err: unknown) => err instanceof BrokerError && err.code === code;

Deno.test("ClusterClient under partial failure", async (t) => {
  await withCluster(3, async (groups, routes, failing) => {
    let now = 1_000_000;
    const logged: string[] = [];
    const options = {
      nowMs: () => now,
      clusterPopPollSliceMs: 20,
      log: (l: string) => logged.push(l),
    };
    const client = new ClusterClient(routes, noTopics, options);
    const heal = () => {
      failing.clear();
      now += 10_001; // past every backoff
    };
    await routes.createTopic("t", 1);

    await t.step("#1 an Idempotency-Key lands on one queue and is never moved", async () => {
      for (const key of ["k1", "k2", "k3", "k4"]) {
        const a = await client.produce("t", { body, idempotencyKey: key });
        const b = await client.produce("t", { body, idempotencyKey: key });
        assert.equal(b.queueId, a.queueId, key);
        assert.equal(b.messageId, a.messageId, key);
        assert.equal(b.idempotentReplay, true, key);
      }
      const a = await client.produce("t", { body, idempotencyKey: "k5" });
      failing.add(groups[a.queueId / 1024].name);
      await assert.rejects(
        client.produce("t", { body, idempotencyKey: "k5" }),
        isCode("BROKER_UNAVAILABLE"),
      );
      heal();
    });

    await t.step("#9 a drained group or one without the topic is moved past", async () => {
      await groups[0].broker.upsertTopic("t", { perm: PERM_READ }); // route still says active
      await groups[2].broker.deleteTopic("t");
      const batch = await client.produceBatch("t", [{ body }, { body }, { body }, { body }]);
      assert.ok(batch.every((r) => r.ok && r.queueId === 1024), JSON.stringify(batch));
      // Again with single messages, on a route that is stale again.
      await groups[0].broker.upsertTopic("t", { perm: 6 });
      await groups[2].broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
      routes.invalidate("t");
      await client.produce("t", { body }); // caches the route: every group active
      await groups[0].broker.upsertTopic("t", { perm: PERM_READ });
      await groups[2].broker.deleteTopic("t");
      routes.invalidated.length = 0;
      for (let i = 0; i < 6; i++) {
        assert.equal((await client.produce("t", { body })).queueId, 1024);
      }
      assert.ok(routes.invalidated.includes("t"));
      // A keyed or explicit message is never moved: its group's refusal is the answer.
      await assert.rejects(
        client.produce("t", { body, queueId: 0 }),
        isCode("TOPIC_PERMISSION_DENIED"),
      );
      await groups[0].broker.upsertTopic("t", { perm: 6 });
      await groups[2].broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
      routes.invalidate("t");
    });

    await t.step("#6 a POP receive returns what it took when a later group refuses", async () => {
      await client.upsertGroup("cg", { consumeFromWhere: "FIRST_OFFSET" });
      await client.receive("cg", { topic: "t", max: 32 }); // drain what the steps above wrote
      await client.produce("t", { body, queueId: 0 });
      await client.produce("t", { body, queueId: 0 });
      await groups[1].broker.deleteTopic("t"); // g-b now answers TOPIC_NOT_FOUND
      routes.invalidated.length = 0;
      let got: { queueId: number }[] = [];
      for (let i = 0; i < 3 && got.length === 0; i++) {
        got = await client.receive("cg", { topic: "t", max: 4 });
      }
      assert.deepEqual(got.map((m) => m.queueId), [0, 0]);
      assert.deepEqual(routes.invalidated, ["t"], "the refusal made the route re-read");
      // Every group refusing, nothing taken: the refusal is the answer.
      await assert.rejects(client.receive("no-such-group", { topic: "t", max: 1 }));
      await groups[1].broker.upsertTopic("t", { readQueueNums: 1, writeQueueNums: 1 });
    });

    await t.step("#18 a POP sweep skips groups in fault backoff", async () => {
      failing.add("g-b");
      await client.produce("t", { body, queueId: 1024 }).catch(() => {}); // g-b into backoff
      failing.delete("g-b");
      groups[1].calls.clear();
      for (let i = 0; i < 4; i++) await client.receive("cg", { topic: "t", max: 4 });
      assert.equal(groups[1].calls.get("receive"), undefined);
      heal();
    });

    await t.step("#13 broadcasts succeed when a live group is failing", async () => {
      failing.add("g-c");
      const members = await client.heartbeat("cg", {
        clientId: "c1",
        subscriptions: [{ topic: "t" }, { topic: "not-yet" }],
      });
      assert.ok(members);
      await client.upsertGroup("cg2", {});
      await client.setTransactionCheck("producers", { url: "https://example.com/check" });
      await client.unregister("cg", "c1");
      assert.ok(logged.some((l) => l.includes("heartbeat of cg") && l.includes("g-c")));
      assert.equal(logged.length, 1, "one line per failing group per backoff window");
      heal();
      // A group one broker group has never heard of: its progress, not GROUP_NOT_FOUND.
      await groups[0].broker.upsertGroup("only-a", {});
      assert.equal((await client.groupProgress("only-a")).group.group, "only-a");
      // A heartbeat naming only a topic that does not exist yet.
      await client.heartbeat("cg", { clientId: "c2", subscriptions: [{ topic: "later" }] });
    });

    await t.step("#11 auto-create follows clusterAutoCreateTopicEnable", async () => {
      const strict = new ClusterClient(routes, noTopics, {
        ...options,
        clusterAutoCreateTopicEnable: false,
      });
      await assert.rejects(strict.produce("fresh", { body }), isCode("TOPIC_NOT_FOUND"));
      assert.equal(routes.records.has("fresh"), false);
      await client.produce("fresh", { body });
      assert.equal(routes.records.has("fresh"), true);
    });
  });
});

Deno.test("#10 #19 the caller's abort is no group failure; a topic-less failure drops routes once", async () => {
  const invalidated: (string | undefined)[] = [];
  const ctx = new ClusterContext({
    groups: () => Promise.resolve([]),
    topic: () => Promise.reject(new Error("unused")),
    invalidate: (topic) => void invalidated.push(topic),
    cacheStats: () => ({ hits: 0, misses: 0 }),
  });
  const link = { name: "g" } as GroupLink;
  const fail = (err: unknown) => () => Promise.reject(err);
  await assert.rejects(ctx.call(link, "t", fail(new DOMException("x", "AbortError"))));
  await assert.rejects(ctx.call(link, "t", fail(new DOMException("x", "TimeoutError"))));
  const caller = new AbortController();
  caller.abort(new Error("caller left"));
  await assert.rejects(ctx.call(link, "t", fail(new Error("caller left")), caller.signal));
  assert.equal(ctx.faults.available("g"), true);
  assert.deepEqual(invalidated, []);
  const down = new BrokerError("BROKER_UNAVAILABLE", "down");
  await assert.rejects(ctx.call(link, undefined, fail(down)));
  await assert.rejects(ctx.call(link, undefined, fail(down)));
  await assert.rejects(ctx.call(link, "t", fail(down)));
  assert.deepEqual(invalidated, [undefined, "t"]);
  assert.equal(ctx.faults.available("g"), false);
});

Deno.test("#20 rotation keys are bounded and kept only after a call succeeded", () => {
  const rotation = new PollRotation(2);
  const links = [{ name: "a" }, { name: "b" }] as GroupLink[];
  rotation.order("refused", links); // never advanced: nothing kept
  assert.equal(rotation.size, 0);
  for (const key of ["k1", "k2", "k3", "k4"]) rotation.order(key, links).advance();
  assert.equal(rotation.size, 2);
  const k4 = rotation.order("k4", links);
  assert.deepEqual(k4.links.map((l) => l.name), ["b", "a"]);
});

Deno.test("#15 queue ids: global, -1 outside the route or from %RETRY%, opaque unrouted", () => {
  const group = (name: string, slot: number) => ({
    link: { name } as GroupLink,
    slot,
    state: "active" as const,
    readQueueNums: 2,
    writeQueueNums: 2,
    perm: 6,
  });
  const route = new TopicQueues({
    topic: "t",
    groups: [group("a", 0), group("b", 1)],
    view: { topic: "t", brokerGroups: [], queues: [] },
  });
  assert.equal(idIn(route, "b", 1), 1025);
  assert.equal(idIn(route, "removed", 1), NO_GLOBAL_QUEUE);
  assert.equal(idIn(undefined, "b", 1), NO_GLOBAL_QUEUE);
  assert.equal(idIn("unrouted", "b", 0), 0);
  const retried = messageIn(route, "b", { queueId: 0, properties: { RETRY_TOPIC: "t" } });
  assert.equal(retried.queueId, NO_GLOBAL_QUEUE);
  assert.equal(messageIn(route, "b", { queueId: 0, properties: {} }).queueId, 1024);
});

Deno.test("#6 #18 a sweep asks groups in backoff only when every other group failed", async () => {
  const ctx = new ClusterContext({
    groups: () => Promise.resolve([]),
    topic: () => Promise.reject(new Error("unused")),
    invalidate: () => {},
    cacheStats: () => ({ hits: 0, misses: 0 }),
  });
  const [a, b, c] = ["a", "b", "c"].map((name) => ({ name }) as GroupLink);
  ctx.faults.failed("a");
  const asked: string[] = [];
  const poll = (answers: Record<string, string[] | Error>) => (link: GroupLink) => {
    asked.push(link.name);
    const got = answers[link.name];
    return got instanceof Error ? Promise.reject(got) : Promise.resolve(got);
  };
  const refused = new BrokerError("TOPIC_NOT_FOUND", "gone");
  const took = await sweepThenPoll(
    ctx,
    [a, b, c],
    { max: 4 },
    undefined,
    poll({ a: ["m1"], b: ["m2"], c: refused }),
  );
  assert.deepEqual(took, ["m2"]);
  assert.deepEqual(asked, ["b", "c"]);
  asked.length = 0;
  const fallback = await sweepThenPoll(
    ctx,
    [a, b, c],
    { max: 4 },
    undefined,
    poll({ a: ["m1"], b: refused, c: refused }),
  );
  assert.deepEqual(fallback, ["m1"]);
  assert.deepEqual(asked, ["b", "c", "a"]);
  await assert.rejects(
    sweepThenPoll(ctx, [a, b], { max: 4 }, undefined, poll({ a: refused, b: refused })),
    (e) => e === refused,
  );
});
